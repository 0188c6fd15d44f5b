GO ?= go
# Packages whose code runs goroutines are tested with the race detector:
# the rollout floor, less the built-in suites and the scenario format (data
# checks over every scenario, single-goroutine, and the slowest under -race).
RACE_PKGS ?= $(shell $(GO) list ./rollout/... | grep -v -e '/rollout/suite' -e '/rollout/scenario$$')

.PHONY: test build vet race fuzz bench demo

build:
	$(GO) build -o bin/antidrift ./cmd/antidrift

vet:
	$(GO) vet ./...

# The command tests run whole pipelines (demo, kill/resume, browser): give
# them more than go test's default 10 minutes on a loaded 2-core machine.
test: vet
	$(GO) test -timeout 30m ./...
	$(GO) test -race -timeout 30m $(RACE_PKGS)

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
# run (ANTIDRIFT_BENCH_QUEUE_C, ANTIDRIFT_BENCH_QUEUE_LATENCY, ANTIDRIFT_BENCH_QUEUE_ROLLOUTS).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./rollout/engine/ ./rollout/queue/ ./rewards/metrics/ ./export/ ./cmd/antidrift/internal/view/
