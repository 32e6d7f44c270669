package traces

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpusim/gpusim/sim"
)

// bigNative returns a native CSV of n rows; row k (0-based) is replaced by bad when
// bad != "".
func bigNative(n, badRow int, bad string) string {
	var b strings.Builder
	b.WriteString("id,submit_s,gpus,duration_s,queue\n")
	for k := 0; k < n; k++ {
		if k == badRow && bad != "" {
			b.WriteString(bad + "\n")
			continue
		}
		fmt.Fprintf(&b, "j%d,%d.5,%d,%d,q%d\n", k, k, k%8, 100+k, k%3)
	}
	return b.String()
}

// The pipelined reader reports exactly what a sequential read would: the first bad
// row in file order, with all rows before it counted.
func TestNativePipelineErrors(t *testing.T) {
	n := 3*nativeBatch + 17
	for name, c := range map[string]struct {
		row  int
		bad  string
		want string
	}{
		"late bad number": {2*nativeBatch + 5, "x,zz,1,1,q", fmt.Sprintf(":%d: column submit_s: bad number", 2*nativeBatch+5+2)},
		"field count":     {nativeBatch + 1, "x,1,1", fmt.Sprintf(":%d: row has 3 fields", nativeBatch+1+2)},
		"dup across":      {3 * nativeBatch, "j7,1,1,1,q", fmt.Sprintf(`:%d: column id: duplicate job id "j7" (first on line 9)`, 3*nativeBatch+2)},
		"last row":        {n - 1, "y,1,1,-1,q", fmt.Sprintf(":%d: column duration_s: negative time -1", n+1)},
	} {
		p := writeTemp(t, "big.csv", bigNative(n, c.row, c.bad))
		r, err := OpenJobs(FormatNative, p)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for {
			_, err = r.Next()
			if err != nil {
				break
			}
			got++
		}
		if err == io.EOF || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
		if got != c.row || r.Report().Rows != c.row+1 || r.Report().Imported != c.row {
			t.Errorf("%s: %d jobs before the error, report %+v", name, got, r.Report())
		}
		if _, err2 := r.Next(); err2 != err {
			t.Errorf("%s: error not sticky: %v", name, err2)
		}
		r.Close()
	}
	jobs, rep, err := ReadJobs(FormatNative, writeTemp(t, "ok.csv", bigNative(n, -1, "")))
	if err != nil || len(jobs) != n || rep.Rows != n {
		t.Fatalf("%v %d %+v", err, len(jobs), rep)
	}
	for k, j := range jobs {
		if string(j.ID) != fmt.Sprintf("j%d", k) {
			t.Fatalf("order: job %d is %s", k, j.ID)
		}
	}
}

// Closing a reader early stops its goroutines.
func TestNativePipelineClose(t *testing.T) {
	p := writeTemp(t, "big.csv", bigNative(20*nativeBatch, -1, ""))
	before := runtime.NumGoroutine()
	for i := 0; i < 5; i++ {
		r, err := OpenJobs(FormatNative, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		r.Close() // idempotent
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Fatalf("%d goroutines left (was %d)", g, before)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(*sim.JobSpec) error {
	f.n++
	if f.n > 10 {
		return errors.New("disk full")
	}
	return nil
}
func (f *failWriter) Close() error { return nil }

func TestCopyJobsWriteError(t *testing.T) {
	p := writeTemp(t, "big.csv", bigNative(5*nativeBatch, -1, ""))
	r, err := OpenJobs(FormatNative, p)
	if err != nil {
		t.Fatal(err)
	}
	n, err := CopyJobs(&failWriter{}, r)
	if n != 10 || err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("%d %v", n, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}
