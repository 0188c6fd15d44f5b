package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/antidrift/antidrift/rollout/skill"
	"github.com/spf13/cobra"
)

// rescoreSelect runs the selection tasks of rescore --select-task for
// every checkpoint into DIR/select/NAME/TASK-LIBRARY, with the rollouts'
// seed, resuming like the rollouts do. It returns the run folders and the
// checkpoints whose selection runs hit infrastructure errors.
func rescoreSelect(cmd *cobra.Command, f rescoreFlags, cks []checkpointSpec) (dirs, incomplete []string, err error) {
	if len(f.selectTasks) == 0 {
		return nil, nil, nil
	}
	for _, t := range f.selectTasks {
		if _, err := skill.ParseTask(t); err != nil {
			return nil, nil, fmt.Errorf("--select-task: %w", err)
		}
	}
	stderr := cmd.ErrOrStderr()
	for _, c := range cks {
		for _, lib := range f.libraries {
			for _, task := range f.selectTasks {
				name := strings.NewReplacer("builtin:", "", "/", "_", ".json", "").Replace(lib)
				dir := filepath.Join(f.out, "select", c.Name, task+"-"+filepath.Base(name))
				sf := selectFlags{task: task, library: lib, policy: c.policy(), endpoint: f.endpoint, rollouts: 1,
					concurrency: f.concurrency, seed: f.seed, out: dir, shard: "0/1", checkpoint: c.Name, step: c.Step,
					force: f.force, asJSON: true, turnTokens: f.turnTokens, temperature: f.temperature}
				if !strings.HasPrefix(c.Endpoint, "sim:") {
					sf.endpoint.baseURL = c.Endpoint
				}
				var out bytes.Buffer
				sub := &cobra.Command{}
				sub.SetOut(&out)
				sub.SetErr(stderr)
				sub.SetContext(cmd.Context())
				fmt.Fprintf(stderr, "rescore: %s: select --task %s --library %s -> %s\n", c.Name, task, lib, dir)
				err := runSelect(sub, sf)
				var ee *exitError
				if errors.As(err, &ee) && ee.code == 2 {
					fmt.Fprintln(stderr, ee.msg)
					incomplete = append(incomplete, c.Name+" ("+task+")")
					continue
				}
				if err != nil {
					return nil, nil, fmt.Errorf("rescore: checkpoint %s: select %s on %s: %w", c.Name, task, lib, err)
				}
				var ss selectSummary
				if json.Unmarshal(out.Bytes(), &ss) == nil {
					for _, r := range ss.Overall {
						fmt.Fprintf(stderr, "rescore: %s: %s: EM %.3f FR %.3f\n", c.Name, task, float64(r.EM), float64(r.FR))
					}
					for _, r := range ss.Pipeline {
						fmt.Fprintf(stderr, "rescore: %s: pipeline: EM1xEM2 %.3f measured %.3f\n", c.Name, float64(r.Product), float64(r.Measured))
					}
				}
				dirs = append(dirs, dir)
			}
		}
	}
	return dirs, incomplete, nil
}
