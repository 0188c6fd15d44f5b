package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rewards/skills"
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
func scoreWithSkills(w io.Writer, res *metrics.Result, haveRollouts bool, dirs []string, bs metrics.Bootstrap, asJSON bool) error {
	var recs []*trajectory.Record
	it := store.Records(dirs...)
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
