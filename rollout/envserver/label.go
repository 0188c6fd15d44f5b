package envserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// LabelConfig sets up antidrift label: traces replayed into a run folder.
type LabelConfig struct {
	Scenarios []*scenario.Scenario
	Engine    engine.Config // framework, filter, limits, checkpoint, version
	Seed      int64         // the run seed, for traces without one
	Rewards   Scorer        // nil: no reward in the report
}

// Labelled is one trace's outcome.
type Labelled struct {
	Line       int        `json:"line"`
	TrajID     string     `json:"traj_id"`
	ScenarioID string     `json:"scenario_id"`
	Skipped    bool       `json:"skipped,omitempty"` // already in the run folder
	Consistent bool       `json:"consistent"`
	Mismatches []Mismatch `json:"mismatches,omitempty"`
	Notes      []string   `json:"notes,omitempty"`
	Labels     *Labels    `json:"labels,omitempty"`
	Reward     *float64   `json:"reward,omitempty"`
}

// LabelFile replays every trace of a JSONL file (one Trace per line) and
// writes the labelled records to the run. A trace's identity is its line:
// rollout = line − 1, so a rerun skips what the folder holds. Errors name
// the file and line; records written before an error stay.
func LabelFile(path string, cfg LabelConfig, run *store.Run, each func(Labelled)) (err error) {
	byID := map[string]*scenario.Scenario{}
	for _, s := range cfg.Scenarios {
		byID[s.ID] = s
	}
	prepared := map[string]*agent.Scenario{}
	if cfg.Engine.Framework == "" {
		cfg.Engine.Framework = engine.FrameworkNormal
	}
	// The run seed draws the tool order recorded with each labelled
	// trace, as a served episode under that seed records it.
	cfg.Engine.Seed = cfg.Seed
	shard := engine.Shard{I: 0, N: 1}.String()
	w, err := run.Writer(shard, 64, time.Second)
	if err != nil {
		return err
	}
	elog, err := run.ErrorLog(shard)
	if err != nil {
		w.Close()
		return err
	}
	defer func() { err = errors.Join(err, w.Close(), elog.Close()) }()
	one := func(line int, where string, tr Trace) error {
		s := byID[tr.ScenarioID]
		if s == nil {
			if tr.ScenarioID == "" {
				return fmt.Errorf("%s: %w: scenario_id is missing", where, ErrBadTrace)
			}
			return fmt.Errorf("%s: %w: scenario %q is not among the loaded scenarios", where, ErrBadTrace, tr.ScenarioID)
		}
		rollout := line - 1
		seed := engine.EpisodeSeed(cfg.Seed, s.ID, rollout)
		if tr.Seed != nil {
			seed = *tr.Seed
		}
		trajID := trajectory.TrajID(run.Manifest.Run, cfg.Engine.Checkpoint, cfg.Engine.Framework, s.ID, rollout, seed)
		if run.Done(trajID) {
			each(Labelled{Line: line, TrajID: trajID, ScenarioID: s.ID, Skipped: true})
			return nil
		}
		sc := prepared[s.ID]
		if sc == nil {
			var err error
			if sc, err = agent.Prepare(s); err != nil {
				return fmt.Errorf("%s: scenario %s: %w", where, s.ID, err)
			}
			prepared[s.ID] = sc
		}
		v, err := Replay(sc, tr, ReplayConfig{Engine: cfg.Engine, Run: run.Manifest.Run, Rollout: rollout, Seed: seed, Protocol: "label"})
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		target := w
		if v.Record.Status == trajectory.StatusInfraError {
			target = elog
		}
		if err := target.Append(v.Record); err != nil {
			return err
		}
		l := Labelled{Line: line, TrajID: v.Record.TrajID, ScenarioID: s.ID, Consistent: v.Consistent,
			Mismatches: v.Mismatches, Notes: v.Notes, Labels: v.Labels}
		if cfg.Rewards != nil && v.Record.Status != trajectory.StatusInfraError {
			rw, err := rewardsOf(cfg.Rewards, "", v.Record, false)
			if err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			l.Reward = &rw.Total
		}
		each(l)
		return nil
	}
	inspect, err := looksInspect(path)
	if err != nil {
		return err
	}
	if inspect {
		// An inspect-ai log: one trace per sample, identified by its index.
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("envserver: %w", err)
		}
		trs, err := InspectTraces(b)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for i, tr := range trs {
			if err := one(i+1, fmt.Sprintf("%s: samples[%d]", path, i), tr); err != nil {
				return err
			}
		}
		return nil
	}
	return scanLines(path, func(line int, b []byte) error {
		var tr Trace
		if err := json.Unmarshal(b, &tr); err != nil {
			return fmt.Errorf("%s:%d: %w: %v", path, line, ErrBadTrace, err)
		}
		return one(line, fmt.Sprintf("%s:%d", path, line), tr)
	})
}

// looksInspect tells an inspect-ai JSON log from JSONL traces by the first
// line: a log is one (usually indented) object with "eval" and "samples".
func looksInspect(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("envserver: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var probe struct {
			Eval    json.RawMessage `json:"eval"`
			Samples json.RawMessage `json:"samples"`
		}
		if json.Unmarshal(line, &probe) != nil {
			return string(line) == "{", nil // an indented object; else a broken first line, reported by the JSONL reader
		}
		return probe.Eval != nil && probe.Samples != nil, nil
	}
	return false, sc.Err()
}
