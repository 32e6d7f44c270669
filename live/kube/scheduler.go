package kube

import (
	"context"
	"errors"
)

// scheduler is one Run: its informers, its sim.Live and its driver.
type scheduler struct{}

func newScheduler(opt Options) (*scheduler, error) {
	if opt.Client == nil {
		return nil, errors.New("kube: no client")
	}
	return nil, errors.New("kube: the Kubernetes backend is being built (branch k8score)")
}

func (s *scheduler) run(ctx context.Context) error { return ctx.Err() }
