package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/skill"
	"github.com/spf13/cobra"
)

func init() { register(newSkillsCmd) }

type librarySummary struct {
	Library  string         `json:"library"`
	Domain   string         `json:"domain"`
	Skills   int            `json:"skills"`
	Tools    int            `json:"tools"`
	Task1    int            `json:"task1_queries"`
	Task2    int            `json:"task2_queries"`
	Settings map[string]int `json:"queries_by_setting"`
	Levels   map[string]int `json:"tools_by_level"`
	Hash     string         `json:"hash"`
	File     string         `json:"written,omitempty"`
}

func newSkillsCmd() *cobra.Command {
	var write string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "skills [builtin:NAME|FILE...]",
		Short: "Validate skill libraries and show their sizes; write the built-in ones as JSON",
		Long: `Load and validate skill libraries (default: every built-in one) and print
their skills, tools by privilege level and queries by task and setting.
An invalid file is reported with every problem, each naming the file and
the JSON path, and exit status 1. --write DIR writes each library as
DIR/NAME.json, a starting point for a library of your own.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = builtinLibraries()
			}
			var out []librarySummary
			var bad []string
			for _, spec := range args {
				l, err := skill.Open(spec)
				if err != nil {
					var ps scenario.Problems
					if errors.As(err, &ps) {
						bad = append(bad, ps.Error())
						continue
					}
					return err
				}
				s := librarySummary{Library: l.Name, Domain: l.Domain, Skills: len(l.Skills), Tools: len(l.Tools),
					Task1: len(l.QueriesOf(skill.TaskSkill)), Task2: len(l.QueriesOf(skill.TaskTools)),
					Settings: map[string]int{}, Levels: map[string]int{}, Hash: skill.Hash(l)}
				for _, q := range l.Queries {
					s.Settings[string(q.Task)+"/"+string(q.Setting)]++
				}
				for _, t := range l.Tools {
					s.Levels[t.Privilege.String()]++
				}
				if write != "" {
					b, err := skill.Marshal(l)
					if err != nil {
						return err
					}
					if err := os.MkdirAll(write, 0o755); err != nil {
						return err
					}
					s.File = filepath.Join(write, l.Name+".json")
					if err := os.WriteFile(s.File, b, 0o644); err != nil {
						return err
					}
				}
				out = append(out, s)
			}
			if len(bad) > 0 {
				return &exitError{code: 1, msg: strings.Join(bad, "\n")}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "library\tdomain\tskills\ttools (L0/L1/L2/L3/L4)\tTask 1 queries\tTask 2 queries")
			for _, s := range out {
				var lv []string
				for _, l := range skill.Levels {
					lv = append(lv, fmt.Sprint(s.Levels[l.String()]))
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d (%s)\t%d\t%d\n", s.Library, s.Domain, s.Skills, s.Tools, strings.Join(lv, "/"), s.Task1, s.Task2)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&write, "write", "", "write each library as DIR/NAME.json")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summaries as JSON")
	return cmd
}
