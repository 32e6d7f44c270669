package reports

import (
	"io"
	"path/filepath"
	"sync"

	"github.com/gpusim/gpusim/internal/fsutil"
)

// fileWriter is one output file of a run directory: its name and the function
// that streams its bytes.
type fileWriter struct {
	name  string
	write func(w io.Writer) error
}

// writeAllAtomic writes every file of files into dir with fsutil.WriteFileAtomic,
// all at once (one goroutine each), and waits for all of them. Each file's bytes
// depend only on its own writer, so the result does not depend on scheduling.
// It returns the error of the first file (in files order) that failed.
func writeAllAtomic(dir string, files []fileWriter) error {
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fsutil.WriteFileAtomic(filepath.Join(dir, f.name), f.write)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
