# gpusim — build, test, benchmark and demo targets. `make help` lists them.
GO       ?= go
BIN      ?= bin/gpusim
PKGS     ?= ./...
# Packages whose tests the CI runs (everything; fuzz seeds run as unit tests).
TESTFLAGS ?= -count=1 -timeout 20m

.PHONY: e2e e2e-deps all build test vet staticcheck unit unit-lpsolve race bench bench-full demo fuzz clean help fmt fidelity-slurm fidelity-kueue fidelity-volcano

all: build

help: ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s "$$(printf '\t')"

build: ## build bin/gpusim
	$(GO) build -o $(BIN) ./cmd/gpusim

fmt: ## gofmt all Go files
	gofmt -w $$(git ls-files '*.go')

vet: ## go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

staticcheck: ## staticcheck (pinned in go.mod as a tool)
	$(GO) tool staticcheck $(PKGS)

unit: ## go test (unit, property, fuzz-seed, CLI testscript tests)
	$(GO) test $(TESTFLAGS) $(PKGS)

# The packer's ILP (policies/pack) links lp_solve through cgo under build tag
# lpsolve (scripts/ensure-lpsolve.sh installs it). Its packages are tested again
# with the tag when the library and cgo are there, and skipped otherwise.
LPSOLVE_PKGS ?= ./policies/pack/ ./policies/placement/
HAVE_LPSOLVE := $(shell test -f /usr/include/lpsolve/lp_lib.h && test -f /usr/lib/lp_solve/liblpsolve55.so && [ "$$($(GO) env CGO_ENABLED)" = 1 ] && command -v gcc >/dev/null && echo 1)

unit-lpsolve: ## go test, vet and staticcheck of the packer with -tags lpsolve (skipped without lp_solve)
ifeq ($(HAVE_LPSOLVE),1)
	$(GO) vet -tags lpsolve $(LPSOLVE_PKGS)
	$(GO) tool staticcheck -tags lpsolve $(LPSOLVE_PKGS)
	$(GO) test $(TESTFLAGS) -tags lpsolve $(LPSOLVE_PKGS)
else
	@echo "unit-lpsolve: lp_solve (scripts/ensure-lpsolve.sh) or cgo missing: skipping the -tags lpsolve tests"
endif

test: vet staticcheck unit unit-lpsolve ## vet + staticcheck + go test (+ the lpsolve-tagged packer tests): what CI runs

race: ## tests under the race detector (slower)
	$(GO) test -race -count=1 -short $(PKGS)

bench: ## quick benchmarks (small sizes)
	$(GO) test -run '^$$' -bench . -benchtime 1x -benchmem -short $(PKGS)

bench-full: ## the issue-sized benchmarks (1M jobs on 10,240 GPUs, engine and whole `gpusim run`; ~2 min)
	$(GO) test -run '^$$' -bench 'BenchmarkRun/' -benchtime 1x -benchmem ./scenarios
	$(GO) test -run '^$$' -bench 'BenchmarkRunCommand1M' -benchtime 3x ./internal/cli

# Real Slurm as oracle (docs/fidelity.md): installs slurm-wlm and munge from
# Debian if missing, runs a private slurmctld and slurmd per node on loopback in
# a temporary directory for each fixture, and rewrites its recorded.csv and
# recorded.meta. Real time: about 25 minutes for all fixtures. FIXTURES picks some.
FIXTURES ?= $(wildcard policies/slurm/testdata/fidelity/*/)

fidelity-slurm: ## record real Slurm on the fidelity fixtures (FIXTURES=dir...; ~25 min; needs root or Slurm installed)
	scripts/fidelity-slurm.sh $(FIXTURES)

# The real Kueue controller as oracle (docs/fidelity.md): builds the Kueue
# manager of KUEUE_VERSION (v0.17.0: e2e/deps/kueue; v0.16.2:
# e2e/deps/kueue-v0.16.2) from the module proxy (scripts/ensure-kueue.sh,
# cached per version), runs it against kubetest's etcd + kube-apiserver with
# that version's CRDs and webhooks on loopback, plays each fixture's Workloads
# and rewrites its recorded.csv and recorded.meta. Fixtures default to
# policies/kueue/testdata/fidelity/ (v0.17.0) or fidelity-<version>/. About
# 1-2 minutes per fixture; needs root.
KUEUE_VERSION ?= v0.17.0
KUEUE_FIXTURES ?=

fidelity-kueue: ## record the real Kueue controller on its fidelity fixtures (KUEUE_VERSION=v0.16.2, KUEUE_FIXTURES=dir...; needs root)
	KUEUE_VERSION=$(KUEUE_VERSION) scripts/fidelity-kueue.sh $(KUEUE_FIXTURES)

# Real Volcano scheduler as oracle (docs/fidelity.md): builds vc-scheduler
# v1.10.0 from the module proxy (scripts/ensure-volcano.sh, cached), runs it
# with etcd + kube-apiserver on loopback for each fixture and rewrites its
# recorded.csv and recorded.meta. VC_FIXTURES picks some.
VC_FIXTURES ?= $(wildcard policies/volcano/testdata/fidelity/*/)

fidelity-volcano: ## record the real Volcano scheduler on its fidelity fixtures (VC_FIXTURES=dir...; ~13 min once built)
	scripts/fidelity-volcano.sh $(VC_FIXTURES)

# End-to-end tests against a real kube-apiserver + etcd (docs/e2e.md). The
# binaries are built from the Go module proxy into ~/.cache/gpusim-e2e/<key>/
# (cold: about 10 min on 2 cores; cached: instant). Not part of `make test`.
E2E_PKGS ?= ./internal/kubetest/ ./live/kubeops/

e2e-deps: ## build and cache kube-apiserver v1.34 and etcd v3.5 from the Go module proxy (scripts/ensure-e2e-deps.sh)
	scripts/ensure-e2e-deps.sh

e2e: ## e2e-deps, then the end-to-end tests with GPUSIM_E2E_REQUIRE=1 (a missing binary fails)
	GPUSIM_E2E_BIN="$$(scripts/ensure-e2e-deps.sh | tail -n1)" GPUSIM_E2E_REQUIRE=1 $(GO) test -count=1 -timeout 10m -run 'E2E' -v $(E2E_PKGS)

demo: build ## run the embedded demo scenario (no external files) into out/demo
	$(BIN) run --demo -o out/demo

# Fuzz time per target for `make fuzz`.
FUZZTIME ?= 20s
# Time spent minimizing each new interesting input (go test -fuzzminimizetime;
# its 60s default would use up short runs).
FUZZMINTIME ?= 5s

fuzz: ## run every Fuzz* target of the repo (found by go test -list, so new ones are included) for FUZZTIME (20s) each
	@set -e; \
	dirs=$$(grep -l '^func Fuzz' $$(git ls-files --cached --others --exclude-standard '*_test.go') | xargs -n1 dirname | sort -u); \
	[ -n "$$dirs" ] || { echo "no fuzz targets found"; exit 1; }; \
	for d in $$dirs; do \
	  for t in $$($(GO) test -list '^Fuzz' ./$$d | grep '^Fuzz'); do \
	    echo "== ./$$d $$t ($(FUZZTIME))"; \
	    $(GO) test ./$$d -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME); \
	  done; \
	done

clean: ## remove build and demo outputs
	rm -rf bin out
