package cli

import (
	"errors"
	"fmt"
)

// Exit codes of the gpusim command.
const (
	ExitOK         = 0 // success
	ExitRuntime    = 1 // runtime failure (I/O, missing NVML, ...)
	ExitUsage      = 2 // bad usage or invalid input (scenario, trace, flags)
	ExitRegression = 3 // a regression gate failed
)

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
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitRuntime
}
