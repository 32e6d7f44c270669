package mig_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/sim/mig"
)

func geo(t testing.TB, model string) *mig.Geometry {
	t.Helper()
	g, ok := mig.Lookup(model)
	if !ok {
		t.Fatalf("no geometry for %q", model)
	}
	return g
}

// The placement table equals NVIDIA's own: the go-nvml mock DGX A100's
// GpuInstancePossiblePlacements per profile ID, and its memory sizes.
func TestPlacementsMatchNVMLMock(t *testing.T) {
	g := geo(t, "A100-SXM4-40GB")
	ids := map[string]int{ // NVML GPU-instance profile IDs of each table row
		"1g.5gb": nvml.GPU_INSTANCE_PROFILE_1_SLICE, "1g.5gb+me": nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1,
		"1g.10gb": nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, "2g.10gb": nvml.GPU_INSTANCE_PROFILE_2_SLICE,
		"3g.20gb": nvml.GPU_INSTANCE_PROFILE_3_SLICE, "4g.20gb": nvml.GPU_INSTANCE_PROFILE_4_SLICE,
		"7g.40gb": nvml.GPU_INSTANCE_PROFILE_7_SLICE,
	}
	for _, p := range g.Profiles {
		id, ok := ids[p.Name]
		if !ok {
			t.Fatalf("profile %s has no NVML id in the test", p.Name)
		}
		var starts []int
		for _, pl := range dgxa100.MIGPlacements.GpuInstancePossiblePlacements[id] {
			starts = append(starts, int(pl.Start))
			if int(pl.Size) != p.Span {
				t.Errorf("%s: span %d, NVML size %d", p.Name, p.Span, pl.Size)
			}
		}
		if !slices.Equal(starts, p.Starts) {
			t.Errorf("%s: starts %v, NVML %v", p.Name, p.Starts, starts)
		}
		info := dgxa100.MIGProfiles.GpuInstanceProfiles[id]
		if int64(info.MemorySizeMB) != p.MemoryMiB || int(info.InstanceCount) != p.MaxInstances || int(info.SliceCount) != p.ComputeSlices {
			t.Errorf("%s: memory %d, max %d, slices %d; NVML %d, %d, %d", p.Name, p.MemoryMiB, p.MaxInstances, p.ComputeSlices,
				info.MemorySizeMB, info.InstanceCount, info.SliceCount)
		}
	}
}

// rename maps the A100-40GB profile names of a combination onto another model's
// names (same table order).
func rename(t *testing.T, g *mig.Geometry, combo []string) []string {
	base := geo(t, "A100-40GB")
	out := make([]string, len(combo))
	for i, n := range combo {
		p, ok := base.Profile(n)
		if !ok {
			t.Fatalf("bad test profile %s", n)
		}
		out[i] = g.Profiles[p].Name
	}
	return out
}

// Valid configurations: the mixed configurations of NVIDIA's MIG User Guide
// (A100 "valid combinations" and the H100 table, which has the same rows) as they
// are written in NVIDIA's mig-parted/gpu-operator default configs, and every
// packing of the guide's placement diagram that fills the GPU.
var validCombos = [][]string{
	{"7g.40gb"},
	{"4g.20gb"}, {"4g.20gb", "2g.10gb", "1g.5gb"}, {"4g.20gb", "1g.5gb", "1g.5gb", "1g.5gb"},
	{"4g.20gb", "1g.10gb", "1g.10gb"}, {"4g.20gb", "2g.10gb", "1g.10gb"},
	{"3g.20gb", "3g.20gb"}, {"3g.20gb", "2g.10gb", "1g.5gb"}, {"3g.20gb", "1g.5gb", "1g.5gb", "1g.5gb"},
	{"3g.20gb", "2g.10gb", "2g.10gb"}, {"2g.10gb", "1g.5gb", "1g.5gb", "3g.20gb"}, {"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "3g.20gb"},
	{"3g.20gb", "1g.10gb", "1g.10gb"}, {"3g.20gb", "1g.10gb", "2g.10gb"},
	{"2g.10gb", "2g.10gb", "2g.10gb", "1g.5gb"}, {"2g.10gb", "2g.10gb", "1g.5gb", "1g.5gb", "1g.5gb"},
	{"2g.10gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"}, {"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"},
	{"2g.10gb", "2g.10gb", "2g.10gb", "1g.10gb"}, {"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"},
	{"1g.5gb+me", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"}, {"1g.5gb+me", "3g.20gb", "2g.10gb"},
	{"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"}, // mig-parted "all-balanced" on A100-40GB
}

// Invalid sets; the first ones need at most 7 compute slices, so only the
// placement table rules them out.
var invalidCombos = [][]string{
	{"3g.20gb", "3g.20gb", "1g.5gb"},                       // 7 slices, 9 memory slices
	{"4g.20gb", "1g.10gb", "1g.10gb", "1g.5gb"},            // 7 slices; the 1g has no slice left
	{"3g.20gb", "1g.10gb", "1g.10gb", "1g.10gb"},           // 6 slices, 10 memory slices
	{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.5gb"}, // 5 slices, 9 memory slices
	{"4g.20gb", "3g.20gb", "1g.5gb"},                       // 8 slices
	{"1g.5gb+me", "1g.5gb+me"},                             // one set of media engines
	{"4g.20gb", "4g.20gb"},                                 // one start
	{"2g.10gb", "2g.10gb", "2g.10gb", "2g.10gb"},           // 8 slices
	{"7g.40gb", "1g.5gb"},
	{"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"},
	{"nope"},
}

func TestCombinationsA100AndH100(t *testing.T) {
	for _, model := range []string{"A100-40GB", "A100-SXM-80GB", "H100-SXM-80GB", "H200", "B200"} {
		g := geo(t, model)
		for _, c := range validCombos {
			names := rename(t, g, c)
			if !g.ValidCombination(names) {
				t.Errorf("%s: valid %v rejected", model, names)
			}
			// Every permutation's answer is the same (the search is order-free).
			rev := slices.Clone(names)
			slices.Reverse(rev)
			if !g.ValidCombination(rev) {
				t.Errorf("%s: valid %v rejected in reverse order", model, rev)
			}
			// Arrange gives starts at which the whole set is placed with PlaceAt.
			idx := make([]int, len(names))
			for i, n := range names {
				idx[i], _ = g.Profile(n)
			}
			starts, ok := g.Arrange(idx)
			if !ok {
				t.Errorf("%s: Arrange(%v) failed", model, names)
				continue
			}
			var l mig.Layout
			for i, p := range idx {
				if l, ok = g.PlaceAt(l, p, starts[i]); !ok {
					t.Errorf("%s: %v at %v: %s does not fit", model, names, starts, names[i])
				}
			}
		}
		for _, c := range invalidCombos {
			names := c
			if c[0] != "nope" {
				names = rename(t, g, c)
			}
			if g.ValidCombination(names) {
				t.Errorf("%s: invalid %v accepted", model, names)
			}
		}
	}
	// Order matters for first-fit but not for ValidCombination: 3g, 2g, 2g placed
	// in that order puts the 3g at 0 and leaves one 2g start.
	g := geo(t, "A100-80GB")
	p3, _ := g.Profile("3g.40gb")
	p2, _ := g.Profile("2g.20gb")
	l, s, _ := g.Place(mig.Layout{}, p3)
	l, _, _ = g.Place(l, p2)
	if _, _, ok := g.Place(l, p2); ok || s != 0 {
		t.Errorf("first-fit 3g,2g,2g: second 2g placed (3g at %d)", s)
	}
	if !g.ValidCombination([]string{"3g.40gb", "2g.20gb", "2g.20gb"}) {
		t.Error("3g+2g+2g is valid with the 3g at slice 4")
	}
}

func TestMaxInstancesAndRelease(t *testing.T) {
	for _, model := range mig.Models() {
		g := geo(t, model)
		for p, pr := range g.Profiles {
			var l mig.Layout
			var starts []int
			for {
				nl, s, ok := g.Place(l, p)
				if !ok {
					break
				}
				l = nl
				starts = append(starts, s)
			}
			if len(starts) != pr.MaxInstances {
				t.Errorf("%s %s: %d instances, want %d", model, pr.Name, len(starts), pr.MaxInstances)
			}
			for _, s := range starts {
				l = g.Release(l, p, s)
			}
			if !l.Free() {
				t.Errorf("%s %s: release left %+v", model, pr.Name, l)
			}
			if got := g.Speed(p); got != float64(pr.ComputeSlices)/7 {
				t.Errorf("%s %s: speed %v", model, pr.Name, got)
			}
		}
	}
}

func TestLookupNames(t *testing.T) {
	for name, want := range map[string]string{
		"A100-SXM4-40GB": "A100-40GB", "NVIDIA A100-SXM4-80GB": "A100-80GB", "A100-SXM-80GB": "A100-80GB",
		"a100-80gb": "A100-80GB", "A100 80GB PCIe": "A100-80GB", "H100-SXM-80GB": "H100-80GB",
		"NVIDIA H100 80GB HBM3": "H100-80GB", "H200": "H200-141GB", "NVIDIA H200": "H200-141GB", "B200": "B200-180GB",
	} {
		g, ok := mig.Lookup(name)
		if !ok || g.Model != want {
			t.Errorf("Lookup(%q) = %v, %v; want %s", name, g, ok, want)
		}
	}
	for _, name := range []string{"T4", "L40S", "V100", "", "H100 NVL", "NVIDIA H100 NVL 94GB"} {
		if _, ok := mig.Lookup(name); ok {
			t.Errorf("Lookup(%q) found a geometry", name)
		}
	}
	if got := strings.Join(mig.Models(), ","); got != "A100-40GB,A100-80GB,B200-180GB,H100-80GB,H200-141GB" {
		t.Errorf("Models = %s", got)
	}
	g := geo(t, "H100-80GB")
	if p, ok := g.Profile("MIG 3g.40gb"); !ok || g.Profiles[p].Name != "3g.40gb" {
		t.Error("Profile with the nvidia-smi prefix")
	}
}

// Random place/release sequences never overlap memory slices, never exceed 7
// compute slices or one media-extension instance, and PlaceAt agrees with Place.
func TestPlaceReleaseProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := geo(t, rapid.SampledFrom(mig.Models()).Draw(rt, "model"))
		type inst struct{ p, s int }
		var l mig.Layout
		var live []inst
		for range rapid.IntRange(1, 40).Draw(rt, "steps") {
			if len(live) > 0 && rapid.Bool().Draw(rt, "release") {
				k := rapid.IntRange(0, len(live)-1).Draw(rt, "k")
				l = g.Release(l, live[k].p, live[k].s)
				live = slices.Delete(live, k, k+1)
			} else {
				p := rapid.IntRange(0, len(g.Profiles)-1).Draw(rt, "p")
				nl, s, ok := g.Place(l, p)
				if ok {
					if al, ok2 := g.PlaceAt(l, p, s); !ok2 || al != nl {
						rt.Fatalf("PlaceAt disagrees with Place")
					}
					l = nl
					live = append(live, inst{p, s})
				}
			}
			var used uint8
			compute, media := 0, 0
			var names []string
			for _, in := range live {
				pr := g.Profiles[in.p]
				m := uint8((1<<pr.Span)-1) << in.s
				if used&m != 0 {
					rt.Fatalf("overlap at %+v", in)
				}
				used |= m
				compute += pr.ComputeSlices
				if pr.MediaExt {
					media++
				}
				names = append(names, pr.Name)
			}
			if used != l.Used || compute > mig.ComputeSlices || media > 1 || (media == 1) != l.Media {
				rt.Fatalf("layout %+v, used %08b, compute %d, media %d", l, used, compute, media)
			}
			if !g.ValidCombination(names) {
				rt.Fatalf("placed set %v judged invalid", names)
			}
		}
	})
}

func TestPlaceDoesNotAllocate(t *testing.T) {
	g := geo(t, "H100-80GB")
	p, _ := g.Profile("1g.10gb")
	if n := testing.AllocsPerRun(100, func() {
		l, s, _ := g.Place(mig.Layout{}, p)
		_ = g.Release(l, p, s)
	}); n != 0 {
		t.Errorf("Place+Release allocate %v times", n)
	}
}

func BenchmarkPlace(b *testing.B) {
	g, _ := mig.Lookup("A100-80GB")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var l mig.Layout
		for p := range 4 {
			l, _, _ = g.Place(l, p)
		}
	}
}
