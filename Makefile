# Shoal — common tasks. `make help` lists them.
GO      ?= go
BIN     ?= bin/shoal
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: help build test test-short demo bench lint fuzz chaos clean

help:
	@echo "make build   - build $(BIN) and $(SHIM)"
	@echo "make demo    - run a 4-node local cluster with a demo gang job (Ctrl-C stops it)"
	@echo "make test    - the full test suite, as CI runs it"
	@echo "make bench   - benchmarks (figures go to BENCHMARKS.md)"
	@echo "make lint    - gofmt, go vet, staticcheck"
	@echo "make fuzz    - run every fuzz target for FUZZTIME (default 10s) each"
	@echo "make chaos   - the long chaos schedule: SEEDS seeds (default 100) of DURATION (default 60s), as root"

# shoal-slurm, beside $(BIN), plays the Slurm commands (sbatch, squeue,
# ...) for scripts: it links only the Slurm front-ends and the API client,
# so each call starts in well under the full binary's time. install-shims
# and the agent link the Slurm names to it when it is there, else to shoal.
# SHIM_CGO=1 (the default) links libc as shoal does, so user and group
# names resolve through NSS (LDAP, SSSD) the same way; SHIM_CGO=0 makes it
# static and faster still, but Go's own lookups read only /etc/passwd and
# /etc/group: for sites whose users are all there (BENCHMARKS.md, "CLI start").
SHIM     ?= $(dir $(BIN))shoal-slurm
SHIM_CGO ?= 1

# TAGS: pmix links the PMIx server of srun --mpi=pmix against libpmix
# (Debian's libpmix-dev, found with pkg-config); TAGS= builds without it
# (srun --mpi=pmix then fails saying so), as does plain `go build`.
TAGS ?= pmix

build:
	$(GO) build -tags "$(TAGS)" -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/shoal
	CGO_ENABLED=$(SHIM_CGO) $(GO) build -ldflags "-X main.version=$(VERSION)" -o $(SHIM) ./cmd/shoal/shim

# The demo runs the built binary rather than `go run`, so Ctrl-C reaches
# shoal itself and a clean stop exits 0 (go run reports the interrupt as a
# failure). SHOAL_DEMO_BIN tells shoal dev which command to print.
demo: build
	@SHOAL_DEMO_BIN=$(BIN) $(BIN) dev

# The README's test command; .ci/run runs exactly this.
test:
	$(GO) test -tags "$(TAGS)" -race -count=1 -timeout 25m ./...

test-short:
	$(GO) test -short -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./...

# staticcheck is pinned in go.mod's tool block (honnef.co/go/tools v0.6.1,
# the 2025.1.1 release), so `go mod download` fetches it with the rest.
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	@# The cgo PMIx server builds only with the pmix tag and libpmix's
	@# headers: vet it too where they are (CI lints before installing them).
	@if pkg-config --exists pmix 2>/dev/null; then echo "$(GO) vet -tags pmix ./exec/pmix/"; $(GO) vet -tags pmix ./exec/pmix/; fi

FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# The long chaos run (root: agents in network namespaces). CI runs a short
# schedule as part of make test.
SEEDS    ?= 100
DURATION ?= 60s
chaos: build
	$(BIN) chaos --seeds $(SEEDS) --duration $(DURATION)

clean:
	rm -rf bin
