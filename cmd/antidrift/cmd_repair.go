package main

import (
	"fmt"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/spf13/cobra"
)

func init() { register(newRepairCmd) }

func newRepairCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "repair RUN",
		Short: "Make a run folder readable again: keep the first copy of each episode, move the rest aside",
		Long: `Repair a run folder that two writers, a hand edit or a crash left unreadable.

For every traj_id the first copy (in file-name, then line order) stays in
trajectories/; later copies, lines that are not valid records and a torn
last line are moved to trajectories.repaired-TIMESTAMP/ under the same file
names. Nothing is deleted. The folder is locked while repair works; rerun
rollout afterwards to finish the plan.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := store.Repair(args[0])
			if err != nil {
				return err
			}
			out := newCheckedWriter(cmd.OutOrStdout())
			if asJSON {
				_ = writeJSON(out, struct {
					Run string `json:"run"`
					store.RepairResult
				}{args[0], res})
				return out.Err()
			}
			if res.Rewritten == 0 {
				fmt.Fprintf(out, "%s: nothing to repair (%d records in %d files)\n", args[0], res.Kept, res.Files)
				return out.Err()
			}
			fmt.Fprintf(out, "%s: kept %d records; moved %d duplicate copies and %d invalid lines from %d files to %s\n",
				args[0], res.Kept, res.Duplicates, res.Invalid, res.Rewritten, res.Aside)
			return out.Err()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
