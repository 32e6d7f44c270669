package calibrate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lucidCSV locates Lucid's colocate_info.csv without it being in the repository
// (its licence forbids copying): <module root>/../shared/interference/lucid/, or
// under $GPUSIM_SHARED_DIR when set (for worktrees outside the main checkout's
// directory). It skips the test when the file is absent.
func lucidCSV(t *testing.T) string {
	t.Helper()
	var dirs []string
	if d := os.Getenv("GPUSIM_SHARED_DIR"); d != "" {
		dirs = append(dirs, d)
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dirs = append(dirs, filepath.Join(d, "..", "shared"))
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, "interference", "lucid", "colocate_info.csv")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skipf("Lucid colocate_info.csv not found in %v (it is not shipped: non-commercial licence)", dirs)
	return ""
}

// TestLucidImport: the 1,388 rows of Lucid's file become 1,388 pairs of 56
// workloads, the first row's speeds are its factors, and the Table answers them.
func TestLucidImport(t *testing.T) {
	p := lucidCSV(t)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, rep, err := ImportLucid(p, f, ImportOptions{GPUModel: "V100"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pairs != 1388 || rep.Workloads != 56 || rep.SkippedDupPair != 0 || rep.SkippedZero != 0 {
		t.Errorf("report %+v", rep)
	}
	m = roundTrip(t, m)
	tb := mustTable(t, FallbackModel{}, m)
	// Row 0: MobileNetV3,ImageNet,1,32,0,0.983,ResNet18,CIFAR-10,1,32,0,1.034,...
	a, _ := tb.WorkloadID("MobileNetV3_ImageNet_bs32")
	b, _ := tb.WorkloadID("ResNet18_CIFAR-10_bs32")
	out := make([]float64, 2)
	if !tb.Factors("v100", ModeTimeslice, []int32{b, a}, nil, out) || out[0] != 1.034 || out[1] != 0.983 {
		t.Errorf("row 0: %v", out)
	}
	// Row 1: ... ResNet18,CIFAR-10,1,32,1 (amp) → 0.97.
	c, ok := tb.WorkloadID("ResNet18_CIFAR-10_bs32_amp")
	if !ok || !tb.Factors("V100", ModeTimeslice, []int32{a, c}, nil, out) || out[0] != 1.055 || out[1] != 0.97 {
		t.Errorf("row 1: %v", out)
	}
}

func TestLucidImportErrors(t *testing.T) {
	const head = ",model1,dataset1,gpu_num1,batchsize1,amp1,speed1,model2,dataset2,gpu_num2,batchsize2,amp2,speed2,gpu_util,gmem_util,gmem\n"
	for _, c := range []struct{ in, want string }{
		{"", "l.csv: empty file"},
		{",model1\n", `l.csv:1: header: missing column "dataset1"`},
		{head + "0,A,D,1,32,0,0.5,B,D,1,32,0,0.7,1,1,1\n1,A,D,1,32,2,0.5,B,D,1,32,0,0.7,1,1,1\n", "l.csv:3: column amp1: want 0 or 1"},
		{head + "0,A,D,1,32,0,x,B,D,1,32,0,0.7,1,1,1\n", "l.csv:2: column speed1"},
		{head + "0,A,D,0,32,0,0.5,B,D,1,32,0,0.7,1,1,1\n", "l.csv:2: column gpu_num1"},
		{head + "0,A,D,1,32,0,0.5\n", "wrong number of fields"},
	} {
		_, _, err := ImportLucid("l.csv", strings.NewReader(c.in), ImportOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.in, err, c.want)
		}
	}
	m, rep, err := ImportLucid("l.csv", strings.NewReader(head+
		"0,A,D,1,32,0,0.5,B,D,1,32,0,0.7,1,1,1\n1,B,D,1,32,0,0.6,A,D,1,32,0,0.4,1,1,1\n2,A,D,1,32,0,0,C,D,1,32,0,0.7,1,1,1\n"), ImportOptions{Mode: ModeMPS})
	if err != nil || rep.Pairs != 1 || rep.SkippedDupPair != 1 || rep.SkippedZero != 1 || m.Modes[0].Mode != ModeMPS || len(m.Workloads) != 3 {
		t.Errorf("dup/zero: %v %+v", err, rep)
	}
}

// FuzzImportLucid: the importer never panics, and whatever it accepts writes
// and reads back as a valid matrix that NewTable accepts.
func FuzzImportLucid(f *testing.F) {
	const head = ",model1,dataset1,gpu_num1,batchsize1,amp1,speed1,model2,dataset2,gpu_num2,batchsize2,amp2,speed2,gpu_util,gmem_util,gmem\n"
	f.Add([]byte(head + "0,A,D,1,32,0,0.5,B,D,1,32,0,0.7,1,1,1\n1,A,D,1,32,0,0.5,A,D,1,32,0,0.7,1,1,1\n"))
	f.Add([]byte(head + "0,A b,D/x,2,32,1,1.5,B,D,1,32,0,0,1,1,1\n"))
	f.Add([]byte("model2,dataset2,gpu_num2,batchsize2,amp2,speed2,model1,dataset1,gpu_num1,batchsize1,amp1,speed1\nA,\"D\n\",1,1,0,1,A,D,1,1,0,1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, _, err := ImportLucid("f.csv", bytes.NewReader(data), ImportOptions{})
		if err != nil {
			return
		}
		if _, err := NewTable(FallbackModel{}, roundTrip(t, m)); err != nil {
			t.Fatalf("NewTable: %v", err)
		}
	})
}

func TestLucidNameCollision(t *testing.T) {
	const head = ",model1,dataset1,gpu_num1,batchsize1,amp1,speed1,model2,dataset2,gpu_num2,batchsize2,amp2,speed2\n"
	_, _, err := ImportLucid("l.csv", strings.NewReader(head+"0,A b,D,1,32,0,0.5,A_b,D,1,32,0,0.7\n"), ImportOptions{})
	if err == nil || !strings.Contains(err.Error(), `l.csv:2: column model2: jobs`) {
		t.Errorf("err = %v", err)
	}
}
