package calibrate

import "testing"

// TestMeasuredH100Matrix checks the matrix `gpusim calibrate run` measured
// through real NVML on an H100 80GB HBM3 (testdata/h100-measured, 2026-11-26;
// plan in its README) loads, names the GPU, and holds the measured findings the
// docs quote: two time-sliced GEMMs keep 0.447 each (0.895 together: switching
// loses about 10% of the GPU), and small-batch inference next to a GEMM keeps
// 0.136 while the GEMM keeps 0.846.
func TestMeasuredH100Matrix(t *testing.T) {
	m, err := LoadInterference("testdata/h100-measured/interference-timeslice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.ModeGPUModel(0); got != "H100-80GB-HBM3" {
		t.Errorf("GPU model %q", got)
	}
	near := func(mode, a, b string, want float64) {
		t.Helper()
		f, ok := m.Factor(mode, a, b)
		if !ok || f < want-0.001 || f > want+0.001 {
			t.Errorf("%s %s|%s = %v (%v), want %v", mode, a, b, f, ok, want)
		}
	}
	near("timeslice", "gemm", "gemm", 0.447)
	near("timeslice", "gemm", "infer", 0.846)
	near("timeslice", "infer", "gemm", 0.136)
	near("timeslice", "stream", "stream", 0.455)
	near("timeslice", "infer", "infer", 0.569)
	g, _ := m.Factor("timeslice", "gemm", "gemm")
	if 2*g >= 1 {
		t.Errorf("two time-sliced GEMMs together %v: the measurement showed a loss", 2*g)
	}
}
