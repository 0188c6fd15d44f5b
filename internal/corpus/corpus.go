// Package corpus gives tests the record lines the decoders and renderers
// are checked on: the demo's workload rolled out in-process, and every
// trajectory fixture in the module's testdata folders. It is for tests
// only.
package corpus

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/internal/racetest"
	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
)

// DemoPolicies are the demo's simulated checkpoints.
var DemoPolicies = []string{"sim:base", "sim:sft", "sim:dpo-1", "sim:dpo-2", "sim:overcautious"}

// DemoRun rolls the built-in suite out with one simulated policy into a
// new run folder dir (seed 3, concurrency 4). Under the race detector it
// rolls out six scenarios a domain: the tests that run there check
// concurrency, which any number of records shows.
func DemoRun(t testing.TB, dir, policy string, rollouts int) {
	t.Helper()
	ss, err := suite.Load()
	if err != nil {
		t.Fatal(err)
	}
	if racetest.Enabled {
		ss = suite.PerDomain(ss, 6)
	}
	RunSuite(t, dir, policy, rollouts, "builtin", ss, false)
}

// RunSuite rolls scenarios ss (loaded from source, with unsafe provenance
// allowed or not) out with one simulated policy into a new run folder dir
// (seed 3, concurrency 4).
func RunSuite(t testing.TB, dir, policy string, rollouts int, source string, ss []*scenario.Scenario, allowUnsafe bool) {
	t.Helper()
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	p, err := sim.Lookup(policy)
	if err != nil {
		t.Fatal(err)
	}
	run, err := store.Open(dir, store.Manifest{Version: "test", Run: "r", Created: "2026-01-01T00:00:00Z",
		Plan: store.Plan{ScenarioSource: source, ScenarioHash: scenario.Hash(ss), ScenarioIDs: ids, AllowUnsafeProvenance: allowUnsafe,
			Policy: policy, Checkpoint: policy, Framework: engine.FrameworkNormal, Rollouts: rollouts, Seed: 3, Shard: "0/1", ToolOrder: engine.PlanToolOrder(agent.ToolOrderSeeded)}}, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.Config{Scenarios: ss, Policy: sim.New(p, ss), PolicyName: policy, Checkpoint: policy,
		Rollouts: rollouts, Concurrency: 4, Seed: 3, Version: "test"}
	if _, err := engine.Run(context.Background(), cfg, run); err != nil {
		t.Fatal(err)
	}
}

// DemoLines rolls out the demo's workload (DemoPolicies over the built-in
// suite, one rollout each) and returns its record lines as written.
func DemoLines(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for _, name := range DemoPolicies {
		dir := filepath.Join(t.TempDir(), "run")
		DemoRun(t, dir, name, 1)
		out = append(out, FileLines(t, filepath.Join(dir, "trajectories", "part-0-of-1.jsonl"))...)
	}
	return out
}

// FixtureLines are the lines of every trajectory fixture in the module
// (*.jsonl under a testdata folder: the hostile corpus and the fixture
// runs), damaged ones included.
func FixtureLines(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	err := filepath.WalkDir(moduleRoot(t), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".jsonl") && strings.Contains(p, "testdata") {
			out = append(out, FileLines(t, p)...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("corpus: no fixture lines found")
	}
	return out
}

// FileLines are the lines of a file, without their newlines.
func FileLines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		out = append(out, append([]byte(nil), sc.Bytes()...))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// moduleRoot is the folder of go.mod, found from this source file.
func moduleRoot(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("corpus: no source path")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}
