package pollux

import (
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// ndInterp is piecewise-linear interpolation over the Delaunay triangulation of
// scattered 3-D points, the model of scipy.interpolate.LinearNDInterpolator
// (which triangulates with Qhull). Instead of building the triangulation, each
// query solves the lifting-map linear programme
//
//	minimise Σ λ_i |p_i − q|²  s.t.  Σ λ_i p_i = q,  Σ λ_i = 1,  λ ≥ 0,
//
// whose optimal basic solution is the barycentric coordinate vector of q in the
// Delaunay cell under q (the lower convex hull of the points lifted onto the
// paraboloid). The interpolated value is Σ λ_i y_i. Where several Delaunay
// triangulations exist (co-spherical points) the LP picks one of them, which may
// differ from Qhull's choice inside such a cell; on cell faces both agree.
type ndInterp struct {
	pts  [][3]float64
	vals [][2]float64
	lo   [3]float64
	hi   [3]float64
}

func newNDInterp(pts [][3]float64, vals [][2]float64) *ndInterp {
	in := &ndInterp{pts: pts, vals: vals}
	for k := range 3 {
		in.lo[k], in.hi[k] = math.Inf(1), math.Inf(-1)
	}
	for _, p := range pts {
		for k := range 3 {
			in.lo[k] = min(in.lo[k], p[k])
			in.hi[k] = max(in.hi[k], p[k])
		}
	}
	return in
}

// at interpolates at q; ok is false outside the convex hull of the points (where
// scipy returns NaN).
func (in *ndInterp) at(q [3]float64) (y [2]float64, ok bool) {
	for k := range 3 {
		if q[k] < in.lo[k] || q[k] > in.hi[k] {
			return y, false
		}
	}
	// An exact data point needs no LP.
	for i, p := range in.pts {
		if p == q {
			return in.vals[i], true
		}
	}
	n := len(in.pts)
	// A uniform scaling keeps the Delaunay triangulation.
	scale := 0.0
	for k := range 3 {
		scale = max(scale, in.hi[k]-in.lo[k])
	}
	c := make([]float64, n)
	dmin := math.Inf(1)
	A := mat.NewDense(4, n, nil)
	for i, p := range in.pts {
		d2 := 0.0
		for k := range 3 {
			d := (p[k] - q[k]) / scale
			A.Set(k, i, d)
			d2 += d * d
		}
		A.Set(3, i, 1)
		c[i] = d2
		if d2 > 0 {
			dmin = min(dmin, d2)
		}
	}
	// Tie-break between the triangulations of co-spherical points: lower the
	// lifted height of later points by a symbolic-size amount, which selects the
	// regular triangulation of the perturbed lift (consistent across queries).
	for i := range c {
		c[i] -= 1e-9 * dmin * float64(i) / float64(n)
	}
	b := []float64{0, 0, 0, 1}
	_, x, err := lp.Simplex(c, A, b, 1e-12, nil)
	if err != nil {
		return y, false
	}
	sum := 0.0
	for i, l := range x {
		if l > 0 {
			y[0] += l * in.vals[i][0]
			y[1] += l * in.vals[i][1]
			sum += l
		}
	}
	if sum <= 0 {
		return y, false
	}
	y[0] /= sum
	y[1] /= sum
	return y, true
}

// atAnywhere is at for the engine's elastic queries (throughputAnywhere).
// Near the corner of most nodes and most replicas the hull is the segment of
// the local batches profiled at that corner, and the interpolation is linear
// along it; gonum's simplex can cycle forever on the degenerate LP there
// (imagenet at 16 nodes, 64 GPUs, local batch 183, moved by 10⁻⁶), so such a
// query (at most 1e-3 from the corner) is answered on the segment: outside
// it, not ok. at itself (the standalone reproduction's exact queries) is
// unchanged.
func (in *ndInterp) atAnywhere(q [3]float64) (y [2]float64, ok bool) {
	if q[0] > in.hi[0]-1e-3 && q[1] > in.hi[1]-1e-3 && q[0] <= in.hi[0] && q[1] <= in.hi[1] {
		return in.corner(q[2])
	}
	return in.at(q)
}

// corner interpolates linearly in local batch b among the points at the
// largest node and replica counts; ok is false outside their range.
func (in *ndInterp) corner(b float64) (y [2]float64, ok bool) {
	lo, hi := -1, -1
	for i, p := range in.pts {
		if p[0] != in.hi[0] || p[1] != in.hi[1] {
			continue
		}
		if p[2] <= b && (lo < 0 || p[2] > in.pts[lo][2]) {
			lo = i
		}
		if p[2] >= b && (hi < 0 || p[2] < in.pts[hi][2]) {
			hi = i
		}
	}
	if lo < 0 || hi < 0 {
		return y, false
	}
	a, c := in.pts[lo][2], in.pts[hi][2]
	if a == c {
		return in.vals[lo], true
	}
	t := (b - a) / (c - a)
	for k := range 2 {
		y[k] = in.vals[lo][k] + t*(in.vals[hi][k]-in.vals[lo][k])
	}
	return y, true
}
