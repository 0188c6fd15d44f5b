package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/spf13/cobra"
)

func init() { register(newScenariosCmd) }

func newScenariosCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenarios",
		Short: "List, validate and show scenarios",
	}
	cmd.AddCommand(newScenariosListCmd(), newScenariosValidateCmd(), newScenariosShowCmd(), newScenariosProbeCmd(), newScenariosAuditCmd())
	return cmd
}

// loadScenarios loads the built-in suite when paths is empty or ["builtin"],
// else the files and folders named. Any problem fails the whole load: a run
// on a partly valid suite would silently change its plan.
func loadScenarios(paths []string, catPath string) ([]*scenario.Scenario, error) {
	return loadScenariosWith(paths, catPath, scenario.Options{})
}

// loadScenariosWith is loadScenarios with loading options; a built-in
// suite is named by "builtin" or "builtin:gating".
func loadScenariosWith(paths []string, catPath string, opts scenario.Options) ([]*scenario.Scenario, error) {
	return loadScenariosOf(paths, catPath, opts, nil)
}

// loadScenariosOf is loadScenariosWith for a reader that needs the
// scenarios with the given ids (nil: all): of the built-in suite only
// their files are parsed (suite.LoadNamedIDs). The caller picks its ids
// from what is returned, and says when one is missing.
func loadScenariosOf(paths []string, catPath string, opts scenario.Options, ids []string) ([]*scenario.Scenario, error) {
	cat := provisions.Builtin()
	if catPath != "" {
		var err error
		if cat, err = provisions.LoadFile(catPath); err != nil {
			return nil, err
		}
	}
	var ss []*scenario.Scenario
	var ps scenario.Problems
	if len(paths) == 0 {
		paths = []string{suite.Name}
	}
	// Built-in suites ("builtin", "builtin:gating") and files or folders
	// combine: "builtin,my-scenarios/" is the suite plus those files.
	var files []string
	for _, p := range paths {
		bs, bps, ok := suite.LoadNamedIDs(p, ids, cat, opts)
		if !ok {
			files = append(files, p)
			continue
		}
		if _, err := os.Stat(p); err == nil {
			// "builtin" names the built-in suite even where a file or
			// folder of that name exists: say which was read.
			fmt.Fprintf(noteOut, "antidrift: %q is the built-in suite; the %s of that name here is not read (pass ./%s for it)\n", p, fileOrFolder(p), p)
		}
		ss, ps = append(ss, bs...), append(ps, bps...)
	}
	if len(files) > 0 {
		ls, lps := scenario.LoadWith(files, cat, opts)
		ss, ps = append(ss, ls...), append(ps, lps...)
	}
	if len(ps) == 0 && len(files) > 0 && len(files) < len(paths) {
		seen := map[string]string{}
		for _, s := range ss {
			if other, dup := seen[s.ID]; dup {
				ps = append(ps, scenario.Problem{File: s.File, Path: "id", Msg: fmt.Sprintf("scenario id %q is also in %s; ids must be unique across the sources given together", s.ID, other)})
			}
			seen[s.ID] = s.File
		}
	}
	if len(ps) > 0 {
		return nil, &exitError{code: 1, msg: ps.Error() + fmt.Sprintf("\n%d problem(s)", len(ps))}
	}
	return ss, nil
}

// noteOut receives loading notes (standard error; tests swap it).
var noteOut io.Writer = os.Stderr

func fileOrFolder(p string) string {
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return "folder"
	}
	return "file"
}

type scenarioSummary struct {
	ID            string   `json:"id"`
	Domain        string   `json:"domain"`
	Tools         int      `json:"tools"`
	RequiredCalls int      `json:"required_calls"`
	Violations    int      `json:"violations"`
	DriftTypes    []string `json:"drift_types"`
	Kinds         []string `json:"violation_kinds"`
	File          string   `json:"file"`
}

func summarize(s *scenario.Scenario) scenarioSummary {
	types, kinds := map[string]bool{}, map[string]bool{}
	for _, v := range s.Violations {
		types[string(v.Drift)] = true
		kinds[string(v.Kind)] = true
	}
	return scenarioSummary{
		ID: s.ID, Domain: s.Domain, Tools: len(s.Tools), RequiredCalls: len(s.RequiredCalls),
		Violations: len(s.Violations), DriftTypes: setList(types), Kinds: setList(kinds), File: s.File,
	}
}

func setList(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func newScenariosListCmd() *cobra.Command {
	var asJSON bool
	var catPath string
	cmd := &cobra.Command{
		Use:   "list [PATH...]",
		Short: "List scenarios (the built-in suite when no path is given)",
		RunE: func(cmd *cobra.Command, args []string) error {
			ss, err := loadScenarios(args, catPath)
			if err != nil {
				return err
			}
			rows := make([]scenarioSummary, len(ss))
			for i, s := range ss {
				rows[i] = summarize(s)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, rows)
			}
			fmt.Fprintf(out, "%-48s %-14s %5s %5s %5s  %s\n", "ID", "DOMAIN", "TOOLS", "REQ", "VIOL", "DRIFT TYPES")
			for _, r := range rows {
				fmt.Fprintf(out, "%-48s %-14s %5d %5d %5d  %v\n", r.ID, r.Domain, r.Tools, r.RequiredCalls, r.Violations, r.DriftTypes)
			}
			fmt.Fprintf(out, "%d scenarios\n", len(rows))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().StringVar(&catPath, "provisions", "", "provisions catalogue JSON (default: built-in)")
	return cmd
}

func newScenariosValidateCmd() *cobra.Command {
	var catPath string
	cmd := &cobra.Command{
		Use:   "validate [PATH...]",
		Short: "Validate scenario files and folders (the built-in suite when no path is given)",
		Long: "Validate scenario files and folders. Every problem is printed on stderr,\n" +
			"naming the file and the JSON path; the exit status is 1 when any is found.",
		RunE: func(cmd *cobra.Command, args []string) error {
			ss, err := loadScenarios(args, catPath)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d scenarios valid\n", len(ss))
			return nil
		},
	}
	cmd.Flags().StringVar(&catPath, "provisions", "", "provisions catalogue JSON (default: built-in)")
	return cmd
}

func newScenariosShowCmd() *cobra.Command {
	var paths []string
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Print one scenario as JSON (loadable again by validate)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ss, err := loadScenarios(paths, "")
			if err != nil {
				return err
			}
			for _, s := range ss {
				if s.ID == args[0] {
					b, err := json.MarshalIndent(s, "", "  ")
					if err != nil {
						return err
					}
					_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
					return err
				}
			}
			return &exitError{code: 1, msg: fmt.Sprintf("antidrift: no scenario with id %q", args[0])}
		},
	}
	cmd.Flags().StringSliceVar(&paths, "scenarios", nil, "scenario files or folders (default: built-in)")
	return cmd
}
