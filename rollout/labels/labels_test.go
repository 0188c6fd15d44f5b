package labels_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/labels"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

func TestKappaHandComputed(t *testing.T) {
	// t[a][b], index 1 = success.
	tests := []struct {
		name                  string
		table                 [2][2]int
		n                     int
		observed, expected, k float64
	}{
		// 50 items: both yes 20, A yes/B no 5, A no/B yes 10, both no 15.
		// p_o = 35/50 = 0.7; P(A yes) = 0.5, P(B yes) = 0.6;
		// p_e = 0.5·0.6 + 0.5·0.4 = 0.5; κ = (0.7 − 0.5)/(1 − 0.5) = 0.4.
		{"textbook", [2][2]int{{15, 10}, {5, 20}}, 50, 0.7, 0.5, 0.4},
		// 100 items: both yes 45, A yes/B no 15, A no/B yes 25, both no 15.
		// p_o = 0.6; P(A yes) = 0.6, P(B yes) = 0.7; p_e = 0.42 + 0.12 = 0.54;
		// κ = 0.06/0.46 = 3/23.
		{"skewed", [2][2]int{{15, 25}, {15, 45}}, 100, 0.6, 0.54, 3.0 / 23},
		{"perfect", [2][2]int{{5, 0}, {0, 5}}, 10, 1, 0.5, 1},
		{"opposite", [2][2]int{{0, 5}, {5, 0}}, 10, 0, 0.5, -1},
		// p_o = 0.8; P(A yes) = 0.9, P(B yes) = 0.9; p_e = 0.81 + 0.01 = 0.82;
		// κ = −0.02/0.18 = −1/9: high raw agreement, worse than chance.
		{"agreement below chance", [2][2]int{{0, 1}, {1, 8}}, 10, 0.8, 0.82, -1.0 / 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, po, pe, k := labels.Kappa(tt.table)
			assert.Equal(t, tt.n, n)
			assert.InDelta(t, tt.observed, po, 1e-12)
			assert.InDelta(t, tt.expected, pe, 1e-12)
			assert.InDelta(t, tt.k, k, 1e-12)
		})
	}
	// Undefined: one label for everything on both sides, or nothing at all.
	for _, tb := range [][2][2]int{{{0, 0}, {0, 7}}, {{7, 0}, {0, 0}}, {}} {
		_, _, _, k := labels.Kappa(tb)
		assert.True(t, math.IsNaN(k), "%v", tb)
	}
}

func lab(id string, success bool, errText string) labels.Label {
	return labels.Label{TrajID: id, ScenarioID: "s-" + id[:1], Success: success,
		Judge: trajectory.Judgement{Kind: "k", Score: map[bool]float64{true: 1}[success], Reason: "why " + id}, Error: errText}
}

func TestCompare(t *testing.T) {
	a := []labels.Label{
		lab("a1", true, ""), lab("a2", true, ""), lab("b3", false, ""), lab("b4", false, ""),
		lab("c5", true, ""), // only in A
		lab("c6", true, ""), // B could not judge it
		lab("c7", false, "endpoint down"),
	}
	b := []labels.Label{
		lab("a2", true, ""), lab("a1", false, ""), lab("b4", false, ""), lab("b3", true, ""),
		lab("c6", false, "unparseable verdict"), lab("c7", true, ""),
		lab("d8", true, ""), // only in B
	}
	ag := labels.Compare(a, b)
	assert.Equal(t, 4, ag.N)
	assert.Equal(t, [2][2]int{{1, 1}, {1, 1}}, ag.Table)
	assert.InDelta(t, 0.5, ag.Observed, 1e-12)
	assert.InDelta(t, 0.0, ag.Kappa, 1e-12)
	assert.Equal(t, 1, ag.OnlyA)
	assert.Equal(t, 1, ag.OnlyB)
	assert.Equal(t, 1, ag.ErrorsA)
	assert.Equal(t, 1, ag.ErrorsB)
	assert.InDelta(t, 0.5, ag.SuccessA, 1e-12)
	require.Len(t, ag.Disagreed, 2)
	assert.Equal(t, labels.Disagreement{TrajID: "a1", ScenarioID: "s-a", A: true, B: false, ReasonA: "why a1", ReasonB: "why a1"}, ag.Disagreed[0])
	assert.Equal(t, "b3", ag.Disagreed[1].TrajID)
	assert.Equal(t, []string{"s-a", "s-b"}, ag.ScenarioIDs())

	// JSON: kappa is a number, or null when undefined.
	js, err := json.Marshal(ag)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(js, &m))
	assert.Equal(t, 0.0, m["kappa"])
	assert.Equal(t, 0.5, m["agreement"])
	assert.Equal(t, float64(4), m["n"])
	same := labels.Compare([]labels.Label{lab("x1", true, "")}, []labels.Label{lab("x1", true, "")})
	js, err = json.Marshal(same)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &m))
	assert.Nil(t, m["kappa"])
	assert.Equal(t, 1.0, m["agreement"])
}

func TestNameFor(t *testing.T) {
	for in, want := range map[string]string{
		"rule":                        "rule",
		"record":                      "record",
		"openai:gpt-4o-mini":          "openai-gpt-4o-mini",
		"openai:Qwen/Qwen2.5-7B":      "openai-Qwen_Qwen2.5-7B",
		"openai:sim:base":             "openai-sim_base",
		"openai:llama3.1:8b-instruct": "openai-llama3.1_8b-instruct",
		"my-labels":                   "my-labels",
	} {
		assert.Equal(t, want, labels.NameFor(in), in)
	}
	assert.NoError(t, labels.ValidName("openai-Qwen_Qwen2.5-7B"))
	for _, bad := range []string{"record", "", "../x", ".hidden", "a/b", "x.replaced-20260101T000000Z", "a b"} {
		assert.Error(t, labels.ValidName(bad), bad)
	}
}

func TestWriteReadForce(t *testing.T) {
	run := t.TempDir()
	ls := []labels.Label{lab("a1", true, ""), lab("a2", false, "unparseable verdict")}
	m := labels.Manifest{Name: "openai-m", Judge: "openai:m", Kind: "llm:m", Records: 2, Successes: 1, Errors: 1}
	backup, err := labels.Write(run, m, ls, false)
	require.NoError(t, err)
	assert.Empty(t, backup)
	got, err := labels.Read(run, "openai-m")
	require.NoError(t, err)
	assert.Equal(t, ls, got)
	gm, err := labels.ReadManifest(run, "openai-m")
	require.NoError(t, err)
	assert.Equal(t, m, gm)
	names, err := labels.List(run)
	require.NoError(t, err)
	assert.Equal(t, []string{"openai-m"}, names)
	assert.True(t, labels.Exists(run, "openai-m"))
	assert.True(t, labels.Exists(run, labels.Record))

	// Never overwritten silently.
	_, err = labels.Write(run, m, ls[:1], false)
	require.Error(t, err)
	assert.True(t, errors.Is(err, labels.ErrExists))
	got, err = labels.Read(run, "openai-m")
	require.NoError(t, err)
	assert.Len(t, got, 2, "a refused write leaves the labeling as it was")

	// --force keeps a backup of both files.
	backup, err = labels.Write(run, m, ls[:1], true)
	require.NoError(t, err)
	require.NotEmpty(t, backup)
	got, err = labels.Read(run, "openai-m")
	require.NoError(t, err)
	assert.Len(t, got, 1)
	old, err := os.ReadFile(filepath.Join(run, labels.Dir, backup+".jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(old), "a2")
	_, err = os.Stat(filepath.Join(run, labels.Dir, backup+".json"))
	require.NoError(t, err)
	gm, err = labels.ReadManifest(run, "openai-m")
	require.NoError(t, err)
	assert.Equal(t, backup, gm.Replaced)
	names, err = labels.List(run)
	require.NoError(t, err)
	assert.Equal(t, []string{"openai-m"}, names, "backups are not labelings")
	// No temporary files are left.
	tmp, _ := filepath.Glob(filepath.Join(run, labels.Dir, ".*"))
	assert.Empty(t, tmp)

	_, err = labels.Read(run, "nope")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "have: record, openai-m")
	_, err = labels.Write(run, labels.Manifest{Name: "record"}, ls, true)
	require.Error(t, err)
}

func TestReadRejectsBrokenFiles(t *testing.T) {
	run := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(run, labels.Dir), 0o755))
	write := func(s string) {
		require.NoError(t, os.WriteFile(labels.Path(run, "x"), []byte(s), 0o644))
	}
	write(`{"traj_id":"a","success":true}` + "\n" + `{"traj_id":"a","success":false}` + "\n")
	_, err := labels.Read(run, "x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "x.jsonl:2: duplicate traj_id a")
	write(`{"traj_id":"a","success":true}` + "\n" + `{"success":tr` + "\n")
	_, err = labels.Read(run, "x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "x.jsonl:2:")
	write(`{"traj_id":"a","success":true}`) // no final newline: still read
	got, err := labels.Read(run, "x")
	require.NoError(t, err)
	assert.Len(t, got, 1)
}
