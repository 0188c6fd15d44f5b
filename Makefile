GO ?= go
# Packages whose code runs goroutines are tested with the race detector.
RACE_PKGS ?= ./rollout/...

.PHONY: test build vet race fuzz bench demo

build:
	$(GO) build -o bin/antidrift ./cmd/antidrift

vet:
	$(GO) vet ./...

test: vet
	$(GO) test ./...
	$(GO) test -race $(RACE_PKGS)

# Short fuzzing sessions of each fuzz target (the seed corpora already run in `make test`).
fuzz:
	$(GO) test ./rollout/scenario -run '^$$' -fuzz FuzzParse -fuzztime 30s
	$(GO) test ./rollout/scenario -run '^$$' -fuzz FuzzMatch -fuzztime 30s

# The whole pipeline offline: simulated checkpoints through the HTTP path.
demo: build
	./bin/antidrift demo --out antidrift-demo
