//go:build tools

// Package apiserverdep only records the kube-apiserver main package so that
// go.mod/go.sum pin all of its dependencies.
package apiserverdep

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
