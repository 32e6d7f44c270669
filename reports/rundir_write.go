package reports

import (
	"io"
	"path/filepath"
	"runtime"
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
// at most GOMAXPROCS at a time (each file's writer holds one row group in
// memory, so more at once than there are CPUs would only add memory), taking
// them in files order, and waits for all of them. Each file's bytes depend only
// on its own writer, so the result does not depend on scheduling. It returns
// the error of the first file (in files order) that failed.
func writeAllAtomic(dir string, files []fileWriter) error {
	errs := make([]error, len(files))
	next := make(chan int, len(files))
	for i := range files {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(len(files), max(runtime.GOMAXPROCS(0), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = fsutil.WriteFileAtomic(filepath.Join(dir, files[i].name), files[i].write)
			}
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
