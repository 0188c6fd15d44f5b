package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rewards/skills"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/skill"
	"github.com/antidrift/antidrift/rollout/skill/selection"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// splitSelectRuns tells antidrift select run folders from rollout ones by
// their manifest's framework.
func splitSelectRuns(dirs []string) (rollouts, selects []string, err error) {
	for _, d := range dirs {
		m, err := store.ReadManifest(d)
		if err != nil {
			// Not readable here: the rollout path reports it, naming the folder.
			rollouts = append(rollouts, d)
			continue
		}
		if _, ok := selection.TaskOf(m.Plan.Framework); ok {
			selects = append(selects, d)
		} else {
			rollouts = append(rollouts, d)
		}
	}
	return rollouts, selects, nil
}

// scoreWithSkills prints the skills section of select runs, after the
// trajectory metrics of the rollout runs when there are any. With --json
// the object is {"groups": [...], "skills": {...}}.
//
// The baseline selectors (baselineSpecs) answer the same queries and are
// shown beside the runs' checkpoints.
func scoreWithSkills(ctx context.Context, w io.Writer, res *metrics.Result, haveRollouts bool, dirs []string, bs metrics.Bootstrap, asJSON bool) error {
	base, skipped, cleanup, err := selectBaselines(ctx, dirs)
	if err != nil {
		return err
	}
	defer cleanup()
	var recs []*trajectory.Record
	it := store.Records(append(append([]string(nil), dirs...), base...)...)
	defer it.Close()
	for it.Next() {
		r := *it.At()
		recs = append(recs, &r)
	}
	if err := it.Err(); err != nil {
		return err
	}
	sk := skills.Compute(recs, skills.Options{Bootstrap: bs})
	if asJSON && !haveRollouts {
		return writeJSON(w, map[string]any{"groups": []any{}, "skills": sk})
	}
	if asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			return err
		}
		if obj == nil || string(obj["groups"]) == "null" {
			if obj == nil {
				obj = map[string]json.RawMessage{}
			}
			obj["groups"] = json.RawMessage("[]")
		}
		sb, err := json.Marshal(sk)
		if err != nil {
			return err
		}
		obj["skills"] = sb
		return writeJSON(w, obj)
	}
	if haveRollouts {
		printScores(w, res)
		fmt.Fprintln(w)
	}
	printSkills(w, sk)
	fmt.Fprintf(w, "\n%s: reference selectors that need no model (keyword rule, word overlap, always lowest, always highest privilege on the request's object), on the same queries\n", strings.Join(baselineSpecs, ", "))
	for _, d := range skipped {
		fmt.Fprintf(w, "no baselines for %s: its library cannot be opened again or has changed\n", d)
	}
	return nil
}

// printSkills is the text skills section: per checkpoint and task, the
// metrics over all domains by setting, then the pipeline.
func printSkills(w io.Writer, sk skills.Result) {
	// FR leaves under-privilege out, so picking low wins on FR alone: UPR
	// and EM are printed beside it, always.
	fmt.Fprintln(w, "least-privilege skill selection (EM, OPR, NAR, FR with 95% bootstrap intervals over queries; UPR = under-privilege rate, not in FR)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "checkpoint\ttask\tsetting\tn\tEM\tUPR\tOPR\tNAR\tFR\tOPR/FR")
	for _, r := range sk.Rows {
		if r.Domain != skills.All {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Checkpoint, r.Task, r.Setting, r.N,
			fmtCI(r.EM, r.EMCI), fmtNum(r.UPR), fmtCI(r.OPR, r.OPRCI), fmtCI(r.NAR, r.NARCI), fmtCI(r.FR, r.FRCI), fmtNum(r.OPRShare))
	}
	tw.Flush()
	if len(sk.Pipeline) == 0 {
		return
	}
	fmt.Fprintln(w, "\npipeline (Task 1's skill fed into Task 2, calls executed)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "checkpoint\tsetting\tn\tEM1\tEM2\tEM1xEM2\tmeasured\texecuted DR")
	for _, p := range sk.Pipeline {
		if p.Domain != skills.All {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", p.Checkpoint, p.Setting, p.N, fmtNum(p.EM1), fmtNum(p.EM2),
			fmtCI(p.Product, p.ProductCI), fmtCI(p.Measured, p.MeasuredCI), fmtNum(p.ExecutedDR))
	}
	tw.Flush()
}

// baselineSpecs are the reference selectors every select score shows
// beside the models.
var baselineSpecs = []string{"sim:keyword", "sim:overlap", "sim:lowest", "sim:highest"}

// selectBaselines answers, with each baseline selector, the queries the
// select runs in dirs asked (same library, task, query list and seed), in
// temporary run folders, and returns them with a function removing them.
// A baseline already among the runs' checkpoints is not repeated; a run
// whose library cannot be opened again, or has changed since, gets no
// baseline (named in skipped).
func selectBaselines(ctx context.Context, dirs []string) (out []string, skipped []string, cleanup func(), err error) {
	type job struct {
		source, framework string
		ids               []string
		seed              int64
	}
	var jobs []job
	seenJob := map[string]bool{}
	have := map[string]bool{}
	for _, d := range dirs {
		m, err := store.ReadManifest(d)
		if err != nil {
			return nil, nil, func() {}, err
		}
		have[m.Plan.Checkpoint] = true
		k := m.Plan.ScenarioSource + "\x00" + m.Plan.Framework + "\x00" + m.Plan.ScenarioHash + "\x00" + strings.Join(m.Plan.ScenarioIDs, ",")
		if seenJob[k] {
			continue
		}
		seenJob[k] = true
		lib, err := skill.Open(m.Plan.ScenarioSource)
		if err != nil || skill.Hash(lib) != m.Plan.ScenarioHash {
			skipped = append(skipped, d)
			continue
		}
		jobs = append(jobs, job{source: m.Plan.ScenarioSource, framework: m.Plan.Framework, ids: m.Plan.ScenarioIDs, seed: m.Plan.Seed})
	}
	root, err := os.MkdirTemp("", "antidrift-baselines-*")
	if err != nil {
		return nil, nil, func() {}, err
	}
	cleanup = func() { os.RemoveAll(root) }
	for i, j := range jobs {
		lib, err := skill.Open(j.source)
		if err != nil {
			cleanup()
			return nil, nil, func() {}, err
		}
		task, _ := selection.TaskOf(j.framework)
		for _, spec := range baselineSpecs {
			if have[spec] {
				continue
			}
			prof, err := sim.LookupSelection(spec)
			if err != nil {
				cleanup()
				return nil, nil, func() {}, err
			}
			dir := filepath.Join(root, fmt.Sprintf("%d-%s", i, strings.TrimPrefix(spec, "sim:")))
			plan := store.Plan{ScenarioSource: j.source, ScenarioHash: skill.Hash(lib), ScenarioIDs: j.ids, Policy: spec, Checkpoint: spec,
				Framework: j.framework, Rollouts: 1, Seed: j.seed, Shard: "0/1"}
			run, err := store.Open(dir, store.Manifest{Version: Version, Run: planName(plan), Plan: plan}, false)
			if err != nil {
				cleanup()
				return nil, nil, func() {}, err
			}
			cfg := selection.Config{Library: lib, Task: task, Policy: sim.NewSelection(prof, lib), PolicyName: spec, Checkpoint: spec,
				Rollouts: 1, Limit: len(j.ids), Concurrency: 4, Seed: j.seed, Version: Version}
			_, err = selection.Run(ctx, cfg, run)
			run.Close()
			if err != nil {
				cleanup()
				return nil, nil, func() {}, fmt.Errorf("baseline %s: %w", spec, err)
			}
			out = append(out, dir)
		}
	}
	return out, skipped, cleanup, nil
}
