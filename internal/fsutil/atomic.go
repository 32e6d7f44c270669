// Package fsutil holds small file-system helpers shared by gpusim's writers.
package fsutil

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotWritableTarget is returned when an output path names something that is
// neither a regular file, a symlink to one, nor a character device or named pipe
// (for example a directory or a socket).
var ErrNotWritableTarget = errors.New("not a regular file, character device or named pipe")

// WriteFileAtomic writes a file through fn so that readers never see a partial
// file: the data goes to a temporary file in the same directory, is synced, and is
// renamed over path only if fn and every write succeed. On failure the temporary
// file is removed and path is left untouched.
//
// Special targets are never replaced:
//   - a symlink is followed and its final target is written (atomically when that
//     target is a regular file or does not exist yet), so the link stays a link;
//   - a character device (/dev/null, /dev/stdout, /dev/full) or a named pipe is
//     opened and written in place, since it cannot be renamed over; a write error
//     there (ENOSPC from /dev/full) is returned like any other;
//   - any other non-regular file (a directory, a socket) is an error wrapping
//     ErrNotWritableTarget.
func WriteFileAtomic(path string, fn func(w io.Writer) error) (err error) {
	target, special, err := resolveTarget(path)
	if err != nil {
		return err
	}
	if special {
		return writeInPlace(target, fn)
	}
	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+TempInfix+"*")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err = fn(bw); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err = os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	return nil
}

// TempInfix is part of the name of every temporary file WriteFileAtomic creates
// ("." + base + TempInfix + random); CleanTemps removes leftovers of killed runs.
const TempInfix = ".tmp-"

// resolveTarget follows symlinks in path and reports whether the final target
// is a special file (character device or named pipe) that must be written in
// place. A missing target is a regular file to be created.
func resolveTarget(path string) (target string, special bool, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return path, false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("output %s: %w", path, err)
	}
	target = path
	if fi.Mode()&os.ModeSymlink != 0 {
		if target, err = filepath.EvalSymlinks(path); err != nil {
			// A dangling link: write the file it points to.
			dst, rerr := os.Readlink(path)
			if rerr != nil {
				return "", false, fmt.Errorf("output %s: %w", path, err)
			}
			if !filepath.IsAbs(dst) {
				dst = filepath.Join(filepath.Dir(path), dst)
			}
			return dst, false, nil
		}
		if fi, err = os.Stat(target); err != nil {
			return "", false, fmt.Errorf("output %s: %w", path, err)
		}
	}
	m := fi.Mode()
	switch {
	case m.IsRegular():
		return target, false, nil
	case m&os.ModeCharDevice != 0, m&os.ModeNamedPipe != 0:
		return target, true, nil
	default:
		return "", false, fmt.Errorf("output %s: %w", path, ErrNotWritableTarget)
	}
}

// writeInPlace writes fn's output straight into a device or pipe.
func writeInPlace(path string, fn func(w io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = fn(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		f.Close()
		var pe *os.PathError
		if errors.As(err, &pe) && pe.Path == path {
			return err // already names the file: "write /dev/full: no space left on device"
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

// WriteBytesAtomic writes b to path atomically (see WriteFileAtomic).
func WriteBytesAtomic(path string, b []byte) error {
	return WriteFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// CleanTemps removes the temporary files and directories that an interrupted
// writer left in dir (names starting with "." and containing TempInfix), and
// returns how many it removed. A missing dir is not an error.
func CleanTemps(dir string) (int, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") && strings.Contains(name, TempInfix) {
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// PublishDir moves the fully written directory tmp to final in one rename, so
// final is either absent, the previous complete directory, or the new complete
// one. An existing final is first renamed aside (to a temporary name that
// CleanTemps recognises) and removed after the new one is in place. tmp and
// final must be in the same parent directory.
func PublishDir(tmp, final string) error {
	old := ""
	if _, err := os.Lstat(final); err == nil {
		o, err := os.MkdirTemp(filepath.Dir(final), "."+filepath.Base(final)+".old"+TempInfix)
		if err != nil {
			return fmt.Errorf("publish %s: %w", final, err)
		}
		if err := os.Remove(o); err != nil {
			return fmt.Errorf("publish %s: %w", final, err)
		}
		if err := os.Rename(final, o); err != nil {
			return fmt.Errorf("publish %s: %w", final, err)
		}
		old = o
	}
	if err := os.Rename(tmp, final); err != nil {
		if old != "" {
			_ = os.Rename(old, final)
		}
		return fmt.Errorf("publish %s: %w", final, err)
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("publish %s: remove the previous directory: %w", final, err)
		}
	}
	return nil
}

// SyncDir fsyncs a directory so that renames into it are durable.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
