//go:build tools

// Package volcanodep only records Volcano's scheduler main package so that
// go.mod/go.sum pin all of its dependencies.
package volcanodep

import _ "volcano.sh/volcano/cmd/scheduler"
