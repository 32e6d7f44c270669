//go:build tools

// Package etcddep only records the etcd main package so that go.mod/go.sum pin
// all of its dependencies.
package etcddep

import _ "go.etcd.io/etcd/server/v3"
