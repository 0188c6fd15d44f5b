// Command antidrift rolls out LLM agents against mock tool environments,
// labels authorization drift, and turns the trajectories into training data.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries an exit code chosen by a subcommand (for example 1 for
// invalid scenarios) along with what to print.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "antidrift",
		Short:         "Turn authorization drift in LLM agents into training data",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.AddCommand(newScenariosCmd(), newRolloutCmd(), newSimServerCmd(), newMergeCmd(), newDemoCmd())
	return root
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "antidrift:", err)
	return 1
}
