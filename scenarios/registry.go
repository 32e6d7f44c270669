package scenarios

// Policy packages register themselves with the policies registry in init; the
// scenario layer links every one so scenarios can name them.
import (
	_ "github.com/gpusim/gpusim/policies/antman"
	_ "github.com/gpusim/gpusim/policies/dagcp"
	_ "github.com/gpusim/gpusim/policies/gandiva"
	_ "github.com/gpusim/gpusim/policies/gavel"
	_ "github.com/gpusim/gpusim/policies/kueue"
	_ "github.com/gpusim/gpusim/policies/lucid"
	_ "github.com/gpusim/gpusim/policies/pollux"
	_ "github.com/gpusim/gpusim/policies/qssf"
	_ "github.com/gpusim/gpusim/policies/slurm"
	_ "github.com/gpusim/gpusim/policies/themis"
	_ "github.com/gpusim/gpusim/policies/tiresias"
	_ "github.com/gpusim/gpusim/policies/volcano"
)
