package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/antidrift/antidrift/export"
)

func init() { register(newInspectCmd) }

// inspectChildEnv marks the child process that does the reading.
const inspectChildEnv = "ANTIDRIFT_INSPECT_CHILD"

// inspectMemoryLimit bounds the child's address space: a corrupt length in
// a file's metadata can make arrow-go allocate hundreds of gigabytes with a
// plain make(), which no recover() catches; bounded, it fails fast.
const inspectMemoryLimit = 16 << 30

func newInspectCmd() *cobra.Command {
	var rows int
	var trainer string
	cmd := &cobra.Command{
		Use:   "inspect FILE | inspect --trainer trl|openrlhf|llamafactory DIR",
		Short: "Show the schema, row count, row groups and first rows of a .parquet, .arrow or .jsonl file",
		Long: `Show what an exported file holds: for Parquet, the Parquet schema, the Arrow
schema stored in the file metadata (message columns as list<extension<arrow.json>>),
the row groups and the file metadata; for Arrow IPC, the schema and record
batches; for JSONL, the columns of the first row. Then the first rows, with
messages pretty-printed. Files are read with arrow-go, not with the writer's
Parquet library. A malformed file is a one-line error naming it: the file is
read in a child process with bounded memory, so that not even a crash of the
reader takes antidrift down.

With --trainer trl|openrlhf|llamafactory, DIR is an export folder (pairs,
rewards, export, select-pairs): every file is re-read as that trainer's
loader reads it (the card's YAML configs and their Parquet split files for
TRL and OpenRLHF, dataset_info.json and the sharegpt files for LLaMA-Factory)
and each row checked for what the trainer takes: columns, message shape,
tool-call arguments, tools, lengths against the card's limits, and (TRL,
OpenRLHF) the prefix property under the real chat templates of the rows'
layout, each row rendered as apply_chat_template renders it. What would
fail is printed per file with a count and the first row; the exit status
is 1 when anything would.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if trainer != "" {
				// re-read a whole export folder as the trainer's loader does
				w := bufio.NewWriter(cmd.OutOrStdout())
				err := export.VerifyDir(w, args[0], trainer)
				if ferr := w.Flush(); err == nil {
					err = ferr
				}
				return err
			}
			if os.Getenv(inspectChildEnv) != "1" {
				if err := inspectInChild(cmd, args[0], rows); !errors.Is(err, errNoChild) {
					return err
				}
			} else {
				var lim syscall.Rlimit
				if syscall.Getrlimit(syscall.RLIMIT_AS, &lim) == nil && lim.Cur > inspectMemoryLimit {
					lim.Cur = inspectMemoryLimit
					_ = syscall.Setrlimit(syscall.RLIMIT_AS, &lim)
				}
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			err := export.Inspect(w, args[0], rows)
			if ferr := w.Flush(); err == nil {
				err = ferr
			}
			return err
		},
	}
	cmd.Flags().IntVar(&rows, "rows", 3, "rows to show (0 for none)")
	cmd.Flags().StringVar(&trainer, "trainer", "", "check a whole export folder DIR as this trainer's loader reads it (trl, openrlhf or llamafactory): columns, message shape, tools, lengths against the card's limits, the chat templates' prefix property; prints what would fail and exits 1 if anything would")
	return cmd
}

var errNoChild = errors.New("no child process")

// inspectInChild runs inspect again as a child process and passes its
// output on; a child that crashed is reported as a malformed file.
func inspectInChild(cmd *cobra.Command, path string, rows int) error {
	self, err := os.Executable()
	if err != nil || strings.HasSuffix(self, ".test") {
		return errNoChild // in tests the command runs in-process
	}
	c := exec.Command(self, "inspect", path, "--rows", fmt.Sprint(rows))
	c.Env = append(os.Environ(), inspectChildEnv+"=1")
	c.Stdout = cmd.OutOrStdout()
	var stderr bytes.Buffer
	c.Stderr = &stderr
	err = c.Run()
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return errNoChild
	}
	msg := stderr.String()
	if line, _, _ := strings.Cut(msg, "\n"); strings.HasPrefix(line, "antidrift: ") {
		return &exitError{code: ee.ExitCode(), msg: line} // the child's own one-line error
	}
	why := "the reader crashed"
	if strings.Contains(msg, "out of memory") {
		why = "the reader ran out of memory: a corrupt length?"
	}
	return fmt.Errorf("%s: malformed file (%s)", path, why)
}
