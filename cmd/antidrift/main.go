// Command antidrift rolls out LLM agents against mock tool environments,
// labels authorization drift, and turns the trajectories into training data.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/spf13/cobra"
)

// exitError carries an exit code chosen by a subcommand (for example 1 for
// invalid scenarios) along with what to print.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// subcommands holds the constructors of the top-level subcommands; each
// cmd_<name>.go file registers its own in an init function, so that adding
// a command never touches this file.
var subcommands []func() *cobra.Command

func register(newCmd func() *cobra.Command) { subcommands = append(subcommands, newCmd) }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "antidrift",
		Short:         "Turn authorization drift in LLM agents into training data",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
		// Every numeric flag is range-checked before a command runs.
		PersistentPreRunE: checkFlags,
	}
	for _, newCmd := range subcommands {
		root.AddCommand(newCmd())
	}
	return root
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	stdout := newCheckedWriter(os.Stdout)
	root.SetOut(stdout)
	stopProfile := startProfile()
	err := root.Execute()
	stopProfile()
	if err == nil {
		err = stdout.Err() // text output to a full disk is a failure, not exit 0
	}
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, secret.Text(ee.msg))
		}
		return ee.code
	}
	// Last line of defence: no URL credential reaches the terminal or a log.
	fmt.Fprintln(os.Stderr, "antidrift:", secret.Text(err.Error()))
	return 1
}

// writeJSON prints v as indented JSON, the --json output of every command.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
