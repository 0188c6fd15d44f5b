package main

import (
	"bufio"

	"github.com/spf13/cobra"

	"github.com/antidrift/antidrift/export"
)

func init() { register(newInspectCmd) }

func newInspectCmd() *cobra.Command {
	var rows int
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Show the schema, row count, row groups and first rows of a .parquet, .arrow or .jsonl file",
		Long: `Show what an exported file holds: for Parquet, the Parquet schema, the Arrow
schema stored in the file metadata (message columns as list<extension<arrow.json>>),
the row groups and the file metadata; for Arrow IPC, the schema and record
batches; for JSONL, the columns of the first row. Then the first rows, with
messages pretty-printed. Files are read with arrow-go, not with the writer's
Parquet library.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := bufio.NewWriter(cmd.OutOrStdout())
			err := export.Inspect(w, args[0], rows)
			if ferr := w.Flush(); err == nil {
				err = ferr
			}
			return err
		},
	}
	cmd.Flags().IntVar(&rows, "rows", 3, "rows to show (0 for none)")
	return cmd
}
