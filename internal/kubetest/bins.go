package kubetest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Environment variables read by the harness.
const (
	// EnvBin names a directory holding etcd and kube-apiserver; it overrides
	// the cache lookup.
	EnvBin = "GPUSIM_E2E_BIN"
	// EnvCache is the cache root of scripts/ensure-e2e-deps.sh
	// (default $HOME/.cache/gpusim-e2e).
	EnvCache = "GPUSIM_E2E_CACHE"
	// EnvRequire=1 turns a missing binary from a skip into a test failure.
	EnvRequire = "GPUSIM_E2E_REQUIRE"
)

// keyFiles are the files, relative to the repository root, whose contents key
// the cache, in the order scripts/ensure-e2e-deps.sh hashes them.
var keyFiles = []string{
	"e2e/deps/apiserver/go.mod", "e2e/deps/apiserver/go.sum",
	"e2e/deps/etcd/go.mod", "e2e/deps/etcd/go.sum",
	"e2e/deps/kueue.version",
}

// CacheKey returns the cache key scripts/ensure-e2e-deps.sh uses for the
// repository at root when built by Go toolchain goVersion (as `go env
// GOVERSION` prints it): the first 16 hex digits of the SHA-256 of
// "goVersion\n" followed by "== path\n" and the contents of each key file.
func CacheKey(root, goVersion string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", goVersion)
	for _, f := range keyFiles {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return "", fmt.Errorf("kubetest: cache key: %w", err)
		}
		fmt.Fprintf(h, "== %s\n", f)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// RepoRoot walks up from the working directory to the directory holding
// e2e/deps (the gpusim repository root).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("kubetest: %w", err)
	}
	for {
		if st, err := os.Stat(filepath.Join(dir, "e2e", "deps")); err == nil && st.IsDir() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kubetest: no e2e/deps above the working directory")
		}
		dir = parent
	}
}

// BinDir returns the directory holding the etcd and kube-apiserver binaries:
// $GPUSIM_E2E_BIN if set, else the cache entry of this repository
// (<cache>/<CacheKey>/bin). It errors when either binary is missing there.
func BinDir() (string, error) {
	dir := os.Getenv(EnvBin)
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		key, err := CacheKey(root, runtime.Version())
		if err != nil {
			return "", err
		}
		cache := os.Getenv(EnvCache)
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("kubetest: %w", err)
			}
			cache = filepath.Join(home, ".cache", "gpusim-e2e")
		}
		dir = filepath.Join(cache, key, "bin")
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("kubetest: %s not built (run make e2e-deps): %w", b, err)
		}
	}
	return dir, nil
}

// BinDirOrSkip returns BinDir, or skips the test when the binaries are
// missing; with GPUSIM_E2E_REQUIRE=1 it fails the test instead.
func BinDirOrSkip(t testing.TB) string {
	t.Helper()
	dir, err := BinDir()
	if err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%v (%s=1)", err, EnvRequire)
		}
		t.Skipf("end-to-end test skipped: %v", err)
	}
	return dir
}
