package selection

import (
	"context"
	"testing"

	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/skill"
)

// BenchmarkMockEnv measures building one query's executed environment.
func BenchmarkMockEnv(b *testing.B) {
	lib, err := skill.Builtin("email")
	if err != nil {
		b.Fatal(err)
	}
	qs := lib.QueriesOf(skill.TaskSkill)
	exec, err := libraryEnv(lib)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		if _, err := newMockEnv(lib, qs[i%len(qs)], exec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPipelineEpisode measures one executed pipeline episode with a
// simulated policy (environment built once per query, as in a run).
func BenchmarkPipelineEpisode(b *testing.B) {
	lib, err := skill.Builtin("email")
	if err != nil {
		b.Fatal(err)
	}
	prof, _ := sim.LookupSelection("base")
	cfg := Config{Library: lib, Task: skill.TaskPipeline, Policy: sim.NewSelection(prof, lib), Rollouts: 1, Seed: 1}
	plan := Plan(cfg, "bench")
	envs := &envCache{lib: lib, m: map[string]*mockEnv{}}
	for _, p := range plan {
		if _, err := envs.get(p.Query); err != nil {
			b.Fatal(err)
		}
	}
	var refusal error
	for i := 0; b.Loop(); i++ {
		if _, err := episode(context.Background(), cfg, "bench", envs, plan[i%len(plan)], &refusal); err != nil {
			b.Fatal(err)
		}
	}
}
