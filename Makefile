GO ?= go
# Packages whose code runs goroutines are tested with the race detector:
# the rollout floor, less the built-in suites and the scenario format (data
# checks over every scenario, and the slowest under -race) and the suite
# audit (single-threaded classifiers) and the skill libraries' composer (a
# single-threaded golden test), and the dataset builders that decode, score
# and render on every core (pairs, rewards, export), less the
# single-threaded coverage simulation. Inside those packages, tests with no
# goroutines skip under the race detector and whole-suite fixtures shrink to
# a stratified part (internal/racetest); the plain
# pass runs them in full.
RACE_PKGS ?= $(shell $(GO) list ./rollout/... ./pairs/... ./rewards/... ./export/... | grep -v -e '/rollout/suite' -e '/rollout/scenario$$' -e '/rollout/audit$$' -e '/rollout/skill/internal/fortisgen$$' -e '/rewards/internal/coverage$$')

.PHONY: test build install vet race fuzz bench bench-data demo coverage image

build:
	$(GO) build -o bin/antidrift ./cmd/antidrift

# antidrift on the PATH: go install puts it in $(go env GOPATH)/bin.
install:
	$(GO) install ./cmd/antidrift

# The container image (Dockerfile: multi-stage, static binary, non-root) that
# `antidrift manifests k8s --image` runs. IMAGE names it; DOCKER may be podman.
IMAGE ?= antidrift:latest
DOCKER ?= docker
image:
	$(DOCKER) build -t $(IMAGE) .

vet:
	$(GO) vet ./...

# The command tests run whole pipelines (demo, kill/resume, browser): give
# them more than go test's default 10 minutes on a loaded 2-core machine.
# The race pass runs beside the plain one: each ends on one long package
# (cmd/antidrift, rollout/queue) that leaves the other core idle.
test: vet
	@$(GO) test -timeout 30m ./... & plain=$$!; \
	$(GO) test -race -timeout 30m $(RACE_PKGS); race=$$?; \
	wait $$plain; plain=$$?; \
	if [ $$plain -ne 0 ] || [ $$race -ne 0 ]; then echo "make test: failed (plain pass exit $$plain, race pass exit $$race)" >&2; exit 1; fi

# The full coverage simulation of the printed intervals (docs/scoring.md):
# 1000 simulated runs per interval type, rate and scenario count, with the
# table it measured. `make test` runs a smaller version of the same test.
coverage:
	$(GO) test ./rewards/internal/coverage -run TestCoverage -full -v -timeout 30m

# Short fuzzing sessions of each fuzz target (the seed corpora already run in `make test`).
fuzz:
	$(GO) test ./rollout/scenario -run '^$$' -fuzz FuzzParse -fuzztime 30s
	$(GO) test ./rollout/scenario -run '^$$' -fuzz FuzzMatch -fuzztime 30s
	$(GO) test ./export -run '^$$' -fuzz FuzzInspect -fuzztime 30s

# The whole pipeline offline: simulated checkpoints through the HTTP path.
demo: build
	./bin/antidrift demo --out antidrift-demo

# Engine benchmarks: steps/s and CPU per step with the in-process sim policy;
# steps/s against sim-server as a ratio to the ideal C/L (C = 256, L = 200ms;
# override with ANTIDRIFT_BENCH_C, ANTIDRIFT_BENCH_LATENCY, ANTIDRIFT_BENCH_STEPS);
# steps/s through the NATS work queue with 1, 2, 4 workers as a ratio to a local
# run (ANTIDRIFT_BENCH_QUEUE_C, ANTIDRIFT_BENCH_QUEUE_LATENCY, ANTIDRIFT_BENCH_QUEUE_ROLLOUTS);
# env serve with 256 concurrent sessions: steps/s and CPU per step (ANTIDRIFT_BENCH_ENV_EPISODES).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./rollout/scenario/ ./rollout/engine/ ./rollout/queue/ ./rollout/envserver/ ./rewards/metrics/ ./export/ ./cmd/antidrift/internal/view/ ./rollout/store/

# Reading commands at training-set scale (docs/benchmarks.md): builds, once,
# the first BENCH_SCENARIOS built-in scenarios × BENCH_ROLLOUTS rollouts of
# sim:base (default 43 × 1,000 = 43,000 trajectories, about 330 MB of JSONL)
# under BENCH_DIR, then times score, pareto, pairs, rewards and export on it
# with /usr/bin/time -v (wall time, peak RSS). scripts/bench-vs-duckdb.sh
# runs DuckDB beside it (not in CI).
BENCH_SCENARIOS ?= 43
BENCH_ROLLOUTS ?= 1000
BENCH_DIR ?= bin/bench-data
BENCH_REPEAT ?= 1
bench-data: build
	BENCH_SCENARIOS=$(BENCH_SCENARIOS) BENCH_ROLLOUTS=$(BENCH_ROLLOUTS) BENCH_DIR=$(BENCH_DIR) BENCH_REPEAT=$(BENCH_REPEAT) ANTIDRIFT=bin/antidrift scripts/bench-data.sh
