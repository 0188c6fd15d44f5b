package main

import (
	"encoding/json"
	"fmt"
	"math"
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
