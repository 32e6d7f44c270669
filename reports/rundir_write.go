package reports

import (
	"runtime"
	"sync"
)

// runTasks runs tasks on at most GOMAXPROCS goroutines (each file writer holds
// a row group in memory, so more at once than there are CPUs would only add
// memory), starting them in order, and waits for all of them. It returns the
// error of the first task (in tasks order) that failed, so the outcome does not
// depend on scheduling.
func runTasks(tasks []func() error) error {
	errs := make([]error, len(tasks))
	next := make(chan int, len(tasks))
	for i := range tasks {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(len(tasks), max(runtime.GOMAXPROCS(0), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = tasks[i]()
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
