package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// firstRequestKey is, computed here from the raw record and independently
// of the rewards package, what a GRPO group shares: the checkpoint, the
// messages up to the first user message (role, content, name) and the
// tools the first step listed as visible, in the record's order.
func firstRequestKey(rec trajectory.Record) string {
	var b strings.Builder
	b.WriteString(rec.Checkpoint + "\x00")
	for _, m := range rec.Messages {
		fmt.Fprintf(&b, "%q %q %q|", m.Role, m.Content, m.Name)
		if m.Role == "user" {
			break
		}
	}
	visible := map[string]bool{}
	first := -1
	for i, s := range rec.Steps {
		if first < 0 || s.Turn < rec.Steps[first].Turn {
			first = i
		}
	}
	if first >= 0 {
		for _, v := range rec.Steps[first].Visible {
			visible[v] = true
		}
	}
	if rec.Framework != "react" {
		for _, t := range rec.Tools {
			var w struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			_ = json.Unmarshal(t, &w)
			if first < 0 || visible[w.Function.Name] {
				b.WriteString("\x01" + w.Function.Name)
			}
		}
	}
	return b.String()
}

// checkGRPOGroups asserts the rewards rows' groups are exactly the
// first-request rule's (the same partition of trajectories) and that
// every advantage is TRL's formula over its group's rollouts, recomputed
// here.
func checkGRPOGroups(t *testing.T, recs map[string]trajectory.Record, rows []dataset.RewardRow) {
	t.Helper()
	byGroup := map[string]map[string]float64{} // group_id → traj → reward
	byKey := map[string]map[string]bool{}      // first-request key → trajs
	for _, r := range rows {
		rec, ok := recs[r.TrajID]
		require.True(t, ok, r.TrajID)
		if byGroup[r.GroupID] == nil {
			byGroup[r.GroupID] = map[string]float64{}
		}
		byGroup[r.GroupID][r.TrajID] = r.Reward
		k := firstRequestKey(rec)
		if byKey[k] == nil {
			byKey[k] = map[string]bool{}
		}
		byKey[k][r.TrajID] = true
		assert.True(t, strings.HasPrefix(r.GroupID, rec.ScenarioID+"@"+rec.Checkpoint+"#"), r.GroupID)
	}
	part := func(m map[string][]string) []string {
		var out []string
		for _, ids := range m {
			sort.Strings(ids)
			out = append(out, strings.Join(ids, ","))
		}
		sort.Strings(out)
		return out
	}
	g, k := map[string][]string{}, map[string][]string{}
	for id, ts := range byGroup {
		for tr := range ts {
			g[id] = append(g[id], tr)
		}
	}
	for key, ts := range byKey {
		for tr := range ts {
			k[key] = append(k[key], tr)
		}
	}
	require.Equal(t, part(k), part(g), "GRPO groups are the rollouts of one first request (and checkpoint)")
	for _, r := range rows {
		rs := byGroup[r.GroupID]
		n := float64(len(rs))
		if n < 2 {
			assert.Zero(t, r.Advantage)
			continue
		}
		mean := 0.0
		for _, x := range rs {
			mean += x
		}
		mean /= n
		ss := 0.0
		for _, x := range rs {
			ss += (x - mean) * (x - mean)
		}
		std := math.Sqrt(ss / (n - 1))
		assert.InDelta(t, (r.Reward-mean)/(std+1e-4), r.Advantage, 1e-9, r.GroupID)
	}
}

type wireMsg struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func wireMsgs(t *testing.T, raw json.RawMessage) []wireMsg {
	t.Helper()
	var ms []wireMsg
	require.NoError(t, json.Unmarshal(raw, &ms))
	return ms
}

// argLeaves are the scalar values of a call's arguments, as text.
func argLeaves(raw json.RawMessage) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			out = append(out, x)
		case float64:
			out = append(out, fmt.Sprint(x))
		}
	}
	walk(v)
	return out
}

// omittedArgs counts, over the message columns of a table's rows, the
// tool-call arguments that come only from a tool result the row omits: a
// value absent from everything the row shows before the call but present
// in a result the trajectory (traj, by traj_id) got before it. It also
// fails on a KTO or rewards completion holding two assistant turns in a
// row. It returns the calls checked and the calls that fail the rule.
func omittedArgs(t *testing.T, path string, traj map[string][]wireMsg) (calls, bad int) {
	t.Helper()
	for i, r := range jsonlRows(t, path) {
		var format string
		_ = json.Unmarshal(r["tool_format"], &format)
		if format == "text" {
			continue // calls are text, no ids to trace
		}
		type side struct{ col, trajCol string }
		var sides []side
		switch {
		case r["chosen"] != nil:
			sides = []side{{"chosen", "chosen_traj_id"}, {"rejected", "rejected_traj_id"}}
		case r["completion"] != nil:
			sides = []side{{"completion", "traj_id"}}
		}
		prompt := wireMsgs(t, r["prompt"])
		for _, s := range sides {
			comp := wireMsgs(t, r[s.col])
			if s.col == "completion" {
				for k := 1; k < len(comp); k++ {
					require.False(t, comp[k].Role == "assistant" && comp[k-1].Role == "assistant",
						"%s row %d: two assistant turns in a row in the completion", path, i)
				}
			}
			var id string
			require.NoError(t, json.Unmarshal(r[s.trajCol], &id))
			full, ok := traj[id]
			if !ok {
				continue // a constructed side: no trajectory
			}
			row := append(append([]wireMsg{}, prompt...), comp...)
			inRow := map[string]bool{}
			for _, m := range row {
				if m.Role == "tool" {
					inRow[m.ToolCallID] = true
				}
			}
			var seen strings.Builder
			for k, m := range row {
				if k >= len(prompt) {
					for _, c := range m.ToolCalls {
						at := -1
						for j, fm := range full {
							for _, fc := range fm.ToolCalls {
								if fc.ID == c.ID {
									at = j
								}
							}
						}
						require.GreaterOrEqual(t, at, 0, "%s row %d: call %s not in trajectory %s", path, i, c.ID, id)
						var omitted strings.Builder
						for _, fm := range full[:at] {
							if fm.Role == "tool" && !inRow[fm.ToolCallID] {
								omitted.WriteString(fm.Content + "\n")
							}
						}
						calls++
						for _, v := range argLeaves(c.Function.Arguments) {
							if len(v) >= 3 && !strings.Contains(seen.String(), v) && strings.Contains(omitted.String(), v) {
								bad++
								break
							}
						}
					}
				}
				seen.WriteString(m.Content + "\n")
				for _, c := range m.ToolCalls {
					seen.Write(c.Function.Arguments)
				}
			}
		}
	}
	return calls, bad
}

// trajectoryMessages reads a trajectories table (JSONL) into messages by traj_id.
func trajectoryMessages(t *testing.T, path string) map[string][]wireMsg {
	t.Helper()
	out := map[string][]wireMsg{}
	for _, r := range jsonlRows(t, path) {
		var id string
		require.NoError(t, json.Unmarshal(r["traj_id"], &id))
		out[id] = wireMsgs(t, r["messages"])
	}
	return out
}

// checkTrainerRowsV3 asserts the trainer-data rules over the tables under
// root (the demo's, or the frameworks'): no KTO or rewards completion holds
// two assistant turns in a row, no call argument in a completion comes only
// from a tool result the row omits, and the GRPO groups follow the
// first-request rule over the runs' records.
func checkTrainerRowsV3(t *testing.T, root string, runs []string) {
	t.Helper()
	traj := trajectoryMessages(t, filepath.Join(root, "trajectories", "jsonl", "trajectories.jsonl"))
	total := 0
	for _, f := range []string{"kto/jsonl/kto.jsonl", "rewards/jsonl/rewards.jsonl", "pairs/jsonl/dpo.jsonl"} {
		calls, bad := omittedArgs(t, filepath.Join(root, f), traj)
		assert.Zero(t, bad, "%s: %d of %d calls use an argument only an omitted tool result holds", f, bad, calls)
		total += calls
	}
	assert.Positive(t, total, "calls were checked")
	recs := recordsByID(t, runs...)
	checkGRPOGroups(t, recs, readJSONL[dataset.RewardRow](t, filepath.Join(root, "rewards", "jsonl", "rewards.jsonl")))
}
