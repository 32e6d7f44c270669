package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/gpusim/gpusim/internal/fsutil"
)

// Exit codes of the gpusim command.
const (
	ExitOK         = 0 // success
	ExitRuntime    = 1 // runtime failure (I/O, missing NVML, ...)
	ExitUsage      = 2 // bad usage or invalid input (scenario, trace, flags)
	ExitRegression = 3 // a regression gate failed
	// ExitInterrupted is the exit code after SIGINT (Ctrl-C) or SIGTERM stopped
	// a command: 128 + SIGINT, as shells report it.
	ExitInterrupted = 130
)

// errInterrupted is the error of a command stopped by a signal.
var errInterrupted = errors.New("interrupted")

// InterruptedError wraps err (a context.Canceled from a signal) so the command
// exits with ExitInterrupted and says "interrupted".
func InterruptedError(err error) error {
	return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("%w (%w)", errInterrupted, err)}
}

// ExitError carries the exit code a command failure maps to.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// UsageError wraps err so the command exits with ExitUsage (2).
func UsageError(err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: ExitUsage, Err: err}
}

// UsageErrorf formats a usage error (exit 2).
func UsageErrorf(format string, args ...any) error {
	return UsageError(fmt.Errorf(format, args...))
}

// RuntimeError wraps err so the command exits with ExitRuntime (1).
func RuntimeError(err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: ExitRuntime, Err: err}
}

// exitCode maps an error to its exit code: ExitError's code, else 1.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, errInterrupted) {
		return ExitInterrupted
	}
	if errors.Is(err, fsutil.ErrNotWritableTarget) {
		return ExitUsage // -o names a directory or a socket
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitRuntime
}

// pathErrorCode maps an *fs.PathError to an exit code: failures to write output
// (no space, quota, read-only file system, I/O error, or a write, sync, close or
// rename that failed) are runtime errors (1); the rest (a missing or unreadable
// input, a path that is a directory) are input errors (2).
func pathErrorCode(pe *fs.PathError) int {
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO, syscall.EPIPE} {
		if errors.Is(pe.Err, e) {
			return ExitRuntime
		}
	}
	switch pe.Op {
	case "write", "sync", "close", "rename", "fsync":
		return ExitRuntime
	}
	return ExitUsage
}
