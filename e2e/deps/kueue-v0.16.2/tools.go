//go:build tools

// Package kueuedep162 only pins the Kueue manager's main package so that
// `go build sigs.k8s.io/kueue/cmd/kueue` resolves inside this module.
package kueuedep162

import _ "sigs.k8s.io/kueue/cmd/kueue"
