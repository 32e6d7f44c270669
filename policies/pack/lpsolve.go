//go:build lpsolve && cgo

package pack

// lp_solve 5.5 (LGPL-2.1, dynamically linked: Debian's lp-solve package ships
// the shared library in /usr/lib/lp_solve, liblpsolve55-dev the headers). See
// scripts/ensure-lpsolve.sh and docs/packer.md.

/*
#cgo LDFLAGS: -L/usr/lib/lp_solve -llpsolve55 -Wl,-rpath,/usr/lib/lp_solve
#include <stdlib.h>
#include <time.h>
#include <lpsolve/lp_lib.h>

static double pack_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// pack_abort stops the branch and bound once the deadline has passed.
static int __WINAPI pack_abort(lprec *lp, void *handle) {
	return pack_now() > *(double *)handle;
}

// pack_solve builds and solves max obj'x s.t. A x <= rhs, 0 <= x <= ub, x
// integer (A column-major, rows 0-based) within budget seconds. It returns the
// lp_solve status (or -100 when the model could not be built) and writes the
// variables into x.
static int pack_solve(int nrows, int ncols, const double *obj, const double *rhs,
		const int *colStart, const int *rowIdx, const double *vals, const double *ub,
		double budget, double *x) {
	lprec *lp = make_lp(nrows, 0);
	if (lp == NULL) return -100;
	set_verbose(lp, NEUTRAL);
	int maxn = 1;
	for (int c = 0; c < ncols; c++) {
		int n = colStart[c+1] - colStart[c];
		if (n + 1 > maxn) maxn = n + 1;
	}
	double *cv = malloc(sizeof(double) * maxn);
	int *cr = malloc(sizeof(int) * maxn);
	int ok = cv != NULL && cr != NULL;
	for (int c = 0; ok && c < ncols; c++) {
		int n = 0;
		cr[n] = 0; cv[n] = obj[c]; n++;
		for (int i = colStart[c]; i < colStart[c+1]; i++) {
			cr[n] = rowIdx[i] + 1; cv[n] = vals[i]; n++;
		}
		ok = add_columnex(lp, n, cv, cr) && set_int(lp, c + 1, TRUE) && set_upbo(lp, c + 1, ub[c]);
	}
	free(cv);
	free(cr);
	for (int r = 0; ok && r < nrows; r++) {
		ok = set_constr_type(lp, r + 1, LE) && set_rh(lp, r + 1, rhs[r]);
	}
	if (!ok) {
		delete_lp(lp);
		return -100;
	}
	set_maxim(lp);
	long secs = (long)budget;
	if ((double)secs < budget) secs++;
	if (secs < 1) secs = 1;
	set_timeout(lp, secs);
	double deadline = pack_now() + budget;
	put_abortfunc(lp, pack_abort, &deadline);
	int ret = solve(lp);
	if (ret == OPTIMAL || ret == PRESOLVED || ret == SUBOPTIMAL || ret == USERABORT || ret == TIMEOUT) {
		if (!get_variables(lp, x)) ret = -101;
	}
	delete_lp(lp);
	return ret;
}
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"
)

func init() { solveMIP = lpSolve }

func lpSolve(m *mipModel, budget time.Duration, x []float64) (mipStatus, error) {
	nc := len(m.obj)
	if nc == 0 {
		return mipOptimal, nil
	}
	// Go memory without Go pointers may be passed to C for the call.
	cs := make([]C.int, len(m.colStart))
	for i, v := range m.colStart {
		cs[i] = C.int(v)
	}
	ri := make([]C.int, len(m.rowIdx))
	for i, v := range m.rowIdx {
		ri[i] = C.int(v)
	}
	ret := C.pack_solve(C.int(m.nrows), C.int(nc),
		(*C.double)(unsafe.Pointer(&m.obj[0])), (*C.double)(unsafe.Pointer(&m.rhs[0])),
		&cs[0], &ri[0], (*C.double)(unsafe.Pointer(&m.vals[0])), (*C.double)(unsafe.Pointer(&m.ub[0])),
		C.double(budget.Seconds()), (*C.double)(unsafe.Pointer(&x[0])))
	switch ret {
	case C.OPTIMAL, C.PRESOLVED:
		return mipOptimal, nil
	case C.SUBOPTIMAL, C.USERABORT, C.TIMEOUT:
		// lp_solve returns SUBOPTIMAL when it stopped with an improved solution;
		// USERABORT/TIMEOUT may still hold one: decode validates it.
		if ret == C.SUBOPTIMAL || anyPositive(x) {
			return mipSuboptimal, nil
		}
		return mipNoSolution, nil
	}
	return 0, fmt.Errorf("lp_solve status %d", int(ret))
}

func anyPositive(x []float64) bool {
	for _, v := range x {
		if v > 0.5 {
			return true
		}
	}
	return false
}
