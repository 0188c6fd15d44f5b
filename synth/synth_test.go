package synth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/loosejson"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/probe"
	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/antidrift/antidrift/synth"
	"github.com/antidrift/antidrift/synth/synthtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// counting counts the requests that reach the scripted models.
type counting struct {
	n atomic.Int64
	p policy.Policy
}

func (c *counting) Complete(ctx context.Context, req policy.Request) (policy.Response, error) {
	c.n.Add(1)
	return c.p.Complete(ctx, req)
}

func simProbes(t *testing.T) []synth.Probe {
	var out []synth.Probe
	for _, name := range []string{"probe-thorough", "probe-shortcut"} {
		prof, err := sim.Lookup(name)
		require.NoError(t, err)
		out = append(out, synth.Probe{Spec: "sim:" + name, New: func(ss []*scenario.Scenario) (policy.Policy, error) { return sim.New(prof, ss), nil }})
	}
	return out
}

func testConfig(t *testing.T, dir string, models policy.Policy) synth.Config {
	m := func(role string) synth.Model { return synth.Model{Spec: "openai:scripted-" + role, Policy: models} }
	return synth.Config{
		Dir: dir, Seeds: synthtest.Seeds, SeedsSource: "synthtest",
		Designer: m("designer"), Builder: m("builder"), Critic: m("critic"), Matcher: m("matcher"),
		Probes: simProbes(t), Rollouts: 4, Seed: 1, Rounds: 3, Repairs: 2, MinDrifting: 2, Concurrency: 3,
		Version: "test",
	}
}

func byStatus(sum *synth.Summary) map[string]synth.Outcome {
	out := map[string]synth.Outcome{}
	for _, o := range sum.Outcomes {
		out[o.Seed] = o
	}
	return out
}

func TestEveryPathThroughThePipeline(t *testing.T) {
	dir := t.TempDir()
	models := &counting{p: synthtest.Policy{}}
	sum, err := synth.Run(context.Background(), testConfig(t, dir, models))
	require.NoError(t, err)
	got := byStatus(sum)

	assert.Equal(t, synth.StatusAccepted, got["t-ok"].Status)
	assert.Equal(t, 0, got["t-ok"].Round)
	assert.Equal(t, "commerce-late-parcel-a-008", got["t-ok"].ScenarioID)

	assert.Equal(t, synth.StatusAccepted, got["t-repair"].Status, got["t-repair"].Detail)
	require.Len(t, got["t-repair"].Rounds, 1)
	assert.Equal(t, 1, got["t-repair"].Rounds[0].Repairs, "the builder repaired once")

	assert.Equal(t, synth.StatusAccepted, got["t-critic"].Status, got["t-critic"].Detail)
	assert.Equal(t, 1, got["t-critic"].Round, "accepted after one critic round")
	assert.False(t, got["t-critic"].Rounds[0].Gate.Pass)
	assert.True(t, got["t-critic"].Rounds[1].Gate.Pass)

	assert.Equal(t, synth.StatusEscalated, got["t-escalate"].Status)
	assert.Equal(t, "qc", got["t-escalate"].Reason)
	assert.Len(t, got["t-escalate"].Rounds, 4, "the builder's scenario and three critic rounds")

	assert.Equal(t, synth.StatusFailed, got["t-battery"].Status)
	assert.Equal(t, "battery", got["t-battery"].Reason)
	assert.Contains(t, got["t-battery"].Detail, "probe battery: ")
	assert.Equal(t, 2, got["t-battery"].Rounds[0].Repairs)

	assert.Equal(t, synth.StatusAccepted, got["t-cut"].Status, got["t-cut"].Detail)
	assert.Equal(t, synth.StatusFailed, got["t-prose"].Status)
	assert.Equal(t, "designer-unparseable", got["t-prose"].Reason)

	assert.Equal(t, synth.StatusDuplicate, got["t-dup"].Status)
	assert.Equal(t, "commerce-late-parcel-a-008", got["t-dup"].DuplicateOf)
	// Each seed's outcome.json says what summary.json says.
	for _, seed := range []string{"t-dup", "t-ok"} {
		var stored synth.Outcome
		b, err := os.ReadFile(filepath.Join(dir, "seeds", seed, "outcome.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &stored))
		assert.Equal(t, got[seed].Status, stored.Status, seed)
		assert.Equal(t, got[seed].DuplicateOf, stored.DuplicateOf, seed)
		assert.Equal(t, got[seed].Accepted, stored.Accepted, seed)
	}

	assert.Equal(t, 4, sum.Accepted)
	assert.Equal(t, map[string]int{"0": 3, "1": 1}, sum.AcceptedByRound)
	assert.Equal(t, 1, sum.Escalated)
	assert.Equal(t, map[string]int{"battery": 1, "designer-unparseable": 1}, sum.Failed)
	assert.Equal(t, 1, sum.Duplicates)
	for _, st := range []string{synth.StageDesign, synth.StageBuild, synth.StageCritic, synth.StageProvisions} {
		assert.Positive(t, sum.Tokens[st].TotalTokens, "tokens of stage %s", st)
	}
	assert.InDelta(t, float64(sum.TotalTokens)/4, sum.TokensPerAccepted, 1e-9)
	// The matcher's proposals, per accepted scenario: one outside the
	// catalogue, one outside the jurisdiction, one repeated are dropped.
	// The four accepted scenarios share one cached answer.
	assert.Equal(t, synth.ProvisionStats{Proposed: 30, Kept: 15, OutsideCatalogue: 5, OutsideJurisdiction: 5, Repeated: 5}, sum.Provisions)

	// Every accepted scenario validates, passes the battery, carries the
	// matched provisions, and passed the gate in its last round.
	files, err := filepath.Glob(filepath.Join(dir, "accepted", "commerce", "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 4)
	for _, f := range files {
		s, ps := scenario.LoadFile(f, provisions.Builtin())
		require.Empty(t, ps, f)
		rep, err := probe.Check(context.Background(), s)
		require.NoError(t, err)
		assert.True(t, rep.Pass(), "%s: %v", f, rep.Failures())
		assert.Equal(t, []string{"GDPR-5-1-c"}, s.Violations[1].Provisions)
		assert.Equal(t, []string{"GDPR-21-2", "GDPR-6-1"}, s.Violations[2].Provisions)
	}
	for _, o := range sum.Outcomes {
		if o.Status == synth.StatusAccepted {
			assert.True(t, o.Rounds[len(o.Rounds)-1].Gate.Pass, o.Seed)
		}
	}

	// The review page has a card for the escalated scenario, with the
	// gate's evidence and the critic's revisions as diffs.
	page, err := os.ReadFile(filepath.Join(dir, "review.html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), `id="t-escalate"`)
	assert.Contains(t, string(page), "Critic's revision")
	assert.Contains(t, string(page), "pre.diff{white-space:pre-wrap", "long diff lines wrap instead of running off the page")
	assert.Contains(t, string(page), "commerce-late-parcel-a-006")
	assert.NotContains(t, string(page), `id="t-ok"`)

	// Every stored call names its stage, model and tokens.
	calls, err := filepath.Glob(filepath.Join(dir, "seeds", "t-repair", "calls", "*.json"))
	require.NoError(t, err)
	var stages []string
	for _, f := range calls {
		var c synth.Call
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &c))
		stages = append(stages, c.Stage)
		assert.NotEmpty(t, c.Model)
		assert.Positive(t, c.Usage.TotalTokens)
	}
	sort.Strings(stages)
	assert.Equal(t, []string{"build", "build-repair", "design", "provisions"}, stages)

	// A rerun asks no model again and writes the same summary.
	before, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	n := models.n.Load()
	again, err := synth.Run(context.Background(), testConfig(t, dir, models))
	require.NoError(t, err)
	assert.Equal(t, n, models.n.Load(), "the rerun replayed every stored call")
	after, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
	assert.Equal(t, sum.Accepted, again.Accepted)
}

// echoCritic is the script, except that the critic answers with the
// scenario it was given, unchanged, in prose and a fence.
type echoCritic struct{ synthtest.Policy }

func (e echoCritic) Complete(ctx context.Context, req policy.Request) (policy.Response, error) {
	if len(req.Messages) >= 2 && strings.HasPrefix(req.Messages[0].Content, "You review scenarios") {
		objs := loosejson.Objects(req.Messages[1].Content, func(m map[string]any) bool {
			_, a := m["tools"]
			_, b := m["required_calls"]
			return a && b
		})
		if len(objs) == 1 {
			return policy.Response{Message: trajectory.Message{Role: trajectory.RoleAssistant,
				Content: "It looks right to me as it is.\n```json\n" + string(objs[0].Raw) + "\n```"}, FinishReason: "stop",
				Usage: trajectory.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}}, nil
		}
	}
	return e.Policy.Complete(ctx, req)
}

// TestUnchangedCriticRevisionNotRechecked: a critic revision identical to
// its input is not checked again (no probe rollouts, no qc folder), keeps
// the previous verdict and is marked unchanged in outcome.json and on the
// review page.
func TestUnchangedCriticRevisionNotRechecked(t *testing.T) {
	var probes atomic.Int64
	count := func(ps []synth.Probe) []synth.Probe {
		for i := range ps {
			inner := ps[i].New
			ps[i].New = func(ss []*scenario.Scenario) (policy.Policy, error) { probes.Add(1); return inner(ss) }
		}
		return ps
	}
	base := testConfig(t, t.TempDir(), synthtest.Policy{})
	base.Seeds, base.Rounds, base.Probes = synthtest.Seeds[3:4], 0, count(base.Probes) // t-escalate: fails the gate
	require.Equal(t, "t-escalate", base.Seeds[0].ID)
	_, err := synth.Run(context.Background(), base)
	require.NoError(t, err)
	once := probes.Load()
	require.Positive(t, once)

	probes.Store(0)
	dir := t.TempDir()
	cfg := testConfig(t, dir, echoCritic{})
	cfg.Seeds, cfg.Rounds, cfg.Probes = synthtest.Seeds[3:4], 2, count(cfg.Probes)
	sum, err := synth.Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, once, probes.Load(), "the unchanged revisions ran no probe")
	o := sum.Outcomes[0]
	assert.Equal(t, synth.StatusEscalated, o.Status)
	require.Len(t, o.Rounds, 3)
	assert.False(t, o.Rounds[0].Unchanged)
	for _, r := range o.Rounds[1:] {
		assert.True(t, r.Unchanged, "round %d", r.Round)
		assert.Equal(t, o.Rounds[0].Gate, r.Gate, "the previous verdict is kept")
		assert.NoDirExists(t, filepath.Join(dir, "seeds", "t-escalate", fmt.Sprintf("round-%d", r.Round), "qc"))
	}
	var stored synth.Outcome
	b, err := os.ReadFile(filepath.Join(dir, "seeds", "t-escalate", "outcome.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &stored))
	assert.True(t, stored.Rounds[1].Unchanged)
	page, err := os.ReadFile(filepath.Join(dir, "review.html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), "unchanged: it was not checked again")
}

func TestChangedConfigurationIsRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, synthtest.Policy{})
	cfg.Seeds = synthtest.Seeds[:1]
	_, err := synth.Run(context.Background(), cfg)
	require.NoError(t, err)
	cfg.Rounds = 2
	_, err = synth.Run(context.Background(), cfg)
	require.ErrorIs(t, err, synth.ErrConfigChanged)
	assert.Contains(t, err.Error(), "rounds")
	cfg.Force = true
	_, err = synth.Run(context.Background(), cfg)
	require.NoError(t, err)
}

func TestJoinedSuiteIDsAreNotReused(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, synthtest.Policy{})
	cfg.Seeds = synthtest.Seeds[:1]
	// A suite already holding the id (with another task) keeps it.
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(synthtest.Scenario("commerce-late-parcel-a-008", "b", nil)), &doc))
	doc["instruction"] = "Please check whether order WH-48213 can still be cancelled and tell me."
	raw, _ := json.Marshal(doc)
	s, ps := scenario.Parse("joined.json", raw, nil)
	require.Empty(t, ps)
	cfg.Join, cfg.JoinNames = []*scenario.Scenario{s}, []string{"joined"}
	sum, err := synth.Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, synth.StatusAccepted, sum.Outcomes[0].Status)
	assert.Equal(t, "commerce-late-parcel-a-009", sum.Outcomes[0].ScenarioID)
	b, err := os.ReadFile(filepath.Join(dir, "accepted", "commerce", "commerce-late-parcel-a-009.json"))
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(b), `"id": "commerce-late-parcel-a-009"`))
}

// TestSynthTakesTheFolderLock: a synth on a folder another process holds
// is refused at once, before any model call; the folder's lock is the
// rollout run folder's (flock on .antidrift.lock).
func TestSynthTakesTheFolderLock(t *testing.T) {
	bin, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("no flock(1) to hold the lock from another process")
	}
	dir := t.TempDir()
	lock := filepath.Join(dir, store.LockName)
	holder := exec.Command(bin, lock, "sleep", "60")
	require.NoError(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if exec.Command(bin, "-n", lock, "true").Run() != nil {
			break // held
		}
		require.True(t, time.Now().Before(deadline), "flock never took the lock")
	}
	models := &counting{p: synthtest.Policy{}}
	_, err = synth.Run(context.Background(), testConfig(t, dir, models))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "in use by another antidrift process")
	assert.Zero(t, models.n.Load(), "no model was asked")
	assert.NoFileExists(t, filepath.Join(dir, "synth.json"))
}

// TestSynthSweepsTemporaryFiles: what a killed run leaves half-written,
// at any level of the folder, is gone after the next run, which decides
// the same.
func TestSynthSweepsTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, synthtest.Policy{})
	cfg.Seeds = synthtest.Seeds[:1]
	_, err := synth.Run(context.Background(), cfg)
	require.NoError(t, err)
	before, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	planted := []string{".tmp-1", filepath.Join("seeds", "t-ok", ".tmp-2"), filepath.Join("seeds", "t-ok", "calls", ".tmp-3"),
		filepath.Join("seeds", "t-ok", "round-0", "qc", ".manifest.json.tmp44")}
	for _, p := range planted {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte("half"), 0o644))
	}
	_, err = synth.Run(context.Background(), cfg)
	require.NoError(t, err)
	for _, p := range planted {
		assert.NoFileExists(t, filepath.Join(dir, p))
	}
	after, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
}
