package pollux

import (
	"errors"

	pm "github.com/gpusim/gpusim/workloads/pollux"
)

type polluxPolicy struct{}

func newPolluxPolicy() *polluxPolicy { return &polluxPolicy{} }

func (p *polluxPolicy) optimize(now pm.Seconds, active []*job, prev [][]int, cfg Config) ([][]int, error) {
	return nil, errors.New("todo")
}
