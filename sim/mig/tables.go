package mig

// The placement starts of NVIDIA's A100/H100 table (see the package comment).
var (
	starts1g   = []int{0, 1, 2, 3, 4, 5, 6}
	starts1gx2 = []int{0, 2, 4, 6}
	starts2g   = []int{0, 2, 4}
	starts3g   = []int{0, 4}
	starts4g   = []int{0}
	starts7g   = []int{0}
)

// table builds a model's profiles from its profile names and memory sizes (MiB),
// in the order 1g, 1g+me, 1g with two memory slices, 2g, 3g, 4g, 7g.
func table(model string, names [7]string, mem [7]int64) Geometry {
	return Geometry{Model: model, Profiles: []Profile{
		{Name: names[0], ComputeSlices: 1, MemorySlices: 1, Span: 1, MemoryMiB: mem[0], Starts: starts1g, MaxInstances: 7},
		{Name: names[1], ComputeSlices: 1, MemorySlices: 1, Span: 1, MemoryMiB: mem[1], Starts: starts1g, MaxInstances: 1, MediaExt: true},
		{Name: names[2], ComputeSlices: 1, MemorySlices: 2, Span: 2, MemoryMiB: mem[2], Starts: starts1gx2, MaxInstances: 4},
		{Name: names[3], ComputeSlices: 2, MemorySlices: 2, Span: 2, MemoryMiB: mem[3], Starts: starts2g, MaxInstances: 3},
		{Name: names[4], ComputeSlices: 3, MemorySlices: 4, Span: 4, MemoryMiB: mem[4], Starts: starts3g, MaxInstances: 2},
		{Name: names[5], ComputeSlices: 4, MemorySlices: 4, Span: 4, MemoryMiB: mem[5], Starts: starts4g, MaxInstances: 1},
		{Name: names[6], ComputeSlices: 7, MemorySlices: 8, Span: 8, MemoryMiB: mem[6], Starts: starts7g, MaxInstances: 1},
	}}
}

// gb converts a nominal decimal size in GB to MiB (H200/B200 approximation).
func gb(n int64) int64 { return n * 1_000_000_000 / (1 << 20) }

var geometries = []Geometry{
	// A100-SXM4-40GB / A100-PCIE-40GB: go-nvml mock dgxa100 MemorySizeMB.
	table("A100-40GB", [7]string{"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"},
		[7]int64{4864, 4864, 9856, 9856, 19968, 19968, 40192}),
	// A100-SXM4-80GB / A100 80GB PCIe: nvidia-smi mig -lgip (9.50/19.50/39.25/79.25 GiB).
	table("A100-80GB", [7]string{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
		[7]int64{9728, 9728, 19968, 19968, 40192, 40192, 81152}),
	// H100 80GB (SXM5 HBM3, PCIe): nvidia-smi mig -lgip (9.75/19.62/39.50/79.25 GiB).
	table("H100-80GB", [7]string{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
		[7]int64{9984, 9984, 20096, 20096, 40448, 40448, 81152}),
	// H200 141GB: nvidia-smi mig -lgip of an H200 (16.00/32.25/69.50/139.75 GiB,
	// NVIDIA/mig-parted issue 120); 2g.35gb taken equal to 1g.35gb as on H100.
	table("H200-141GB", [7]string{"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"},
		[7]int64{16384, 16384, 33024, 33024, 71168, 71168, 143104}),
	// B200 180GB: profile names from the MIG User Guide; memory nominal.
	table("B200-180GB", [7]string{"1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"},
		[7]int64{gb(23), gb(23), gb(45), gb(45), gb(90), gb(90), gb(180)}),
}
