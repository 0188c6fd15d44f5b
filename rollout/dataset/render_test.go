package dataset_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// demoRun rolls the built-in suite out in-process with one simulated
// checkpoint into a run folder.
func demoRun(t *testing.T, dir, name string, rollouts int) {
	t.Helper()
	ss, err := suite.Load()
	require.NoError(t, err)
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	p, err := sim.Lookup(name)
	require.NoError(t, err)
	run, err := store.Open(dir, store.Manifest{Version: "test", Run: "r", Created: "2026-01-01T00:00:00Z",
		Plan: store.Plan{ScenarioSource: "builtin", ScenarioHash: scenario.Hash(ss), ScenarioIDs: ids,
			Policy: name, Checkpoint: name, Framework: engine.FrameworkNormal, Rollouts: rollouts, Seed: 3, Shard: "0/1"}}, false)
	require.NoError(t, err)
	cfg := engine.Config{Scenarios: ss, Policy: sim.New(p, ss), PolicyName: name, Checkpoint: name,
		Rollouts: rollouts, Concurrency: 4, Seed: 3, Version: "test"}
	_, err = engine.Run(context.Background(), cfg, run)
	require.NoError(t, err)
}

// demoMessages rolls out the demo's workload in-process (the five
// simulated checkpoints over the built-in suite, one rollout each) and
// returns the messages of its records as read back.
func demoMessages(t *testing.T) []trajectory.Message {
	t.Helper()
	var out []trajectory.Message
	for _, name := range []string{"sim:base", "sim:sft", "sim:dpo-1", "sim:dpo-2", "sim:overcautious"} {
		dir := filepath.Join(t.TempDir(), "run")
		demoRun(t, dir, name, 1)
		out = append(out, fileMessages(t, filepath.Join(dir, "trajectories", "part-0-of-1.jsonl"))...)
	}
	return out
}

// fileMessages decodes the records of a JSONL file, skipping lines that
// are not records (the hostile corpus holds some).
func fileMessages(t *testing.T, path string) []trajectory.Message {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []trajectory.Message
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var rec trajectory.Record
		if store.DecodeRecord(sc.Bytes(), &rec) == nil {
			out = append(out, rec.Messages...)
		}
	}
	return out
}

// fixtureMessages are the messages of every record fixture in the module.
func fixtureMessages(t *testing.T) []trajectory.Message {
	t.Helper()
	var out []trajectory.Message
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".jsonl") && strings.Contains(p, "testdata") {
			out = append(out, fileMessages(t, p)...)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, out, "no fixture records found")
	return out
}

// hostileMessages put strings and argument values that take every path of
// encoding/json's escaping and compaction into every field.
func hostileMessages() []trajectory.Message {
	strs := []string{"", "plain", `"q"\`, "tab\tnl\ncr\r\b\f\x00\x1f\x7f", "<b>&amp;</b>", "\u2028\u2029", "bad\xff\xc3",
		"\xe2\x80", "\xed\xa0\x80 surrogate", "😀 é ü", "\ufffd", "\u00a0"}
	args := []string{`{"a":1}`, ` { "a" : [ 1 , 2 ] ,"b":"<&>\u2028" } `, `{"n":123456789012345678901234567890,"f":-1.5e-300}`,
		"{\"s\":\"\\u003c raw \xe2\x80\xa8 and \xff\"}", `{}`, `[1]`, `"str"`, `null`, `{"a":`, `{bad}`, ``, " ", "\u00a0{}", `{"a":1}x`}
	var out []trajectory.Message
	for i, s := range strs {
		for j, a := range args {
			tc := trajectory.ToolCall{ID: strs[(i+j)%len(strs)], Type: strs[(i+2*j)%len(strs)],
				Function: trajectory.FunctionCall{Name: s, Arguments: a}}
			if j%2 == 0 {
				tc.Function.Parsed = json.RawMessage(a) // even when not valid: a caller's in-memory record
			}
			out = append(out, trajectory.Message{Role: trajectory.RoleAssistant, Content: s, Reasoning: strs[(i+j)%len(strs)],
				ToolCalls: []trajectory.ToolCall{tc, {Function: trajectory.FunctionCall{Name: "g", Parsed: json.RawMessage(args[(i+j)%len(args)])}}}})
		}
		out = append(out, trajectory.Message{Role: s, Content: s, ToolCallID: s, Name: s, Reasoning: s})
	}
	return out
}

// The message rendering writes exactly json.Marshal's bytes for its wire
// types, with and without reasoning, and falls back to it (panicking as it
// does) where json.Marshal fails.
func TestRenderMatchesEncodingJSON(t *testing.T) {
	demo := demoMessages(t)
	require.Greater(t, len(demo), 1000)
	sets := map[string][]trajectory.Message{"demo": demo, "fixtures": fixtureMessages(t), "hostile": hostileMessages()}
	for name, ms := range sets {
		failed := 0
		for _, o := range []dataset.RenderOptions{{}, {Reasoning: true}} {
			for i, m := range ms {
				want, panicked := dataset.MarshalMessageForTest(m, o)
				got, ok := dataset.AppendMessageForTest(m, o)
				if ok == panicked {
					t.Fatalf("%s message %d (%+v): fast path ok=%v, json.Marshal panicked=%v", name, i, m, ok, panicked)
				}
				if !ok {
					failed++
					continue
				}
				require.True(t, len(got) > 0 && got[0] == '{' && dataset.ValidJSON(got), "%s message %d: a JSON object", name, i)
				if !bytes.Equal(got, want) {
					t.Fatalf("%s message %d (reasoning %v):\n got %s\nwant %s", name, i, o.Reasoning, got, want)
				}
			}
			// the slice form shares one buffer and gives the same bytes
			if failed == 0 {
				for i, b := range dataset.MessagesWith(ms, o) {
					want, _ := dataset.MarshalMessageForTest(ms[i], o)
					require.Equal(t, string(want), string(b), "%s MessagesWith[%d]", name, i)
					require.Equal(t, len(b), cap(b), "a message's capacity ends at its length")
				}
			}
		}
		if name == "hostile" {
			require.Positive(t, failed, "the hostile set has arguments json.Marshal refuses")
		}
	}
}
