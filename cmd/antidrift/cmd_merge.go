package main

import (
	"fmt"
	"time"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/spf13/cobra"
)

func init() { register(newMergeCmd) }

func newMergeCmd() *cobra.Command {
	var out string
	var resume bool
	cmd := &cobra.Command{
		Use:   "merge --out DIR SHARD_DIR...",
		Short: "Join the shard folders of one run into one run folder",
		Long: `Join shard folders written by rollout --shard i/n into one run folder. The
shards must share one plan (apart from the shard); records are checked for
duplicates, and a missing shard or episode is reported. With --resume an
existing --out that is an earlier merge of the same run is replaced (the new
merge built beside it first), so that a merge step can be rerun once missing
shards are done.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			merge := store.Merge
			if resume {
				merge = store.MergeAgain
			}
			res, err := merge(out, args, Version, time.Now().UTC())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "merged %d shard folders into %s: %d records of %d planned\n", len(args), out, res.Records, res.Planned)
			if res.Records < res.Planned {
				return &exitError{code: 2, msg: fmt.Sprintf("antidrift: the merged run is incomplete: %d of %d planned episodes (rerun the missing shards, then merge again)", res.Records, res.Planned)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "merged run folder (must not exist yet, unless --resume)")
	cmd.Flags().BoolVar(&resume, "resume", false, "replace --out when it is an earlier merge of the same run (idempotent merge steps)")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}
