package nvml

import (
	"errors"
	"testing"

	"github.com/gpusim/gpusim/calibrate"
)

// On machines without the NVIDIA driver (CI) Init must fail with
// ErrNVMLNotFound, never panic. On a GPU box it must succeed.
func TestInitWithoutDriver(t *testing.T) {
	p := New("")
	err := p.Init()
	if err == nil {
		defer p.Shutdown()
		n, err := p.DeviceCount()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("NVML present: %d GPU(s)", n)
		for i := 0; i < n; i++ {
			if _, err := p.DeviceInfo(i); err != nil {
				t.Errorf("GPU %d: %v", i, err)
			}
			if _, err := p.Sample(i); err != nil {
				t.Errorf("GPU %d sample: %v", i, err)
			}
		}
		return
	}
	if !errors.Is(err, calibrate.ErrNVMLNotFound) {
		t.Fatalf("Init without driver: got %v, want ErrNVMLNotFound", err)
	}
}

// A library path that does not exist maps to ErrNVMLNotFound too.
func TestInitBadLibraryPath(t *testing.T) {
	err := New("/nonexistent/libnvidia-ml.so.1").Init()
	if !errors.Is(err, calibrate.ErrNVMLNotFound) {
		t.Fatalf("got %v, want ErrNVMLNotFound", err)
	}
}
