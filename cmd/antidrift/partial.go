package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/antidrift/antidrift/export"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/spf13/pflag"
)

// partialFlag is --allow-partial, on every command that reads run folders
// into results (score, pareto, pairs, rewards, export).
type partialFlag struct {
	allow bool
	found []store.Presence // the partial inputs, once checked
}

func (p *partialFlag) add(fl *pflag.FlagSet) {
	fl.BoolVar(&p.allow, "allow-partial", false, "use run folders that lack planned episodes (labelled partial, with counts, in every output)")
}

// check compares each run folder's plan with its records. A partial run
// (planned episodes missing, or records whose scenario or rollout is
// outside the plan) is refused unless --allow-partial; then it is reported on stderr and
// labelled in the outputs (notes returns the labels).
func (p *partialFlag) check(dirs []string, stderr io.Writer) error {
	var prs []store.Presence
	for _, d := range dirs {
		pr, err := store.Count(d)
		if err != nil {
			return err
		}
		prs = append(prs, pr)
	}
	return p.checkCounted(prs, stderr)
}

// checkCounted is check over counts already made (a reader that counted
// the records as it read them: metrics.Result.Presence). Runs it finds
// partial are added to those found before.
func (p *partialFlag) checkCounted(prs []store.Presence, stderr io.Writer) error {
	var found []store.Presence
	for _, pr := range prs {
		if pr.Partial() {
			found = append(found, pr)
		}
	}
	if len(found) == 0 {
		return nil
	}
	p.found = append(p.found, found...)
	if !p.allow {
		if pr := found[0]; pr.Outside > 0 {
			return fmt.Errorf("run %s: records of another plan; move them out of the run folder, or pass --allow-partial to use the run as it is, labelled partial", pr)
		}
		return fmt.Errorf("partial run %s; finish it (rerun its rollout command, which resumes), or pass --allow-partial to use it as it is, labelled partial", found[0])
	}
	for _, pr := range found {
		fmt.Fprintf(stderr, "antidrift: warning: partial run %s; outputs are labelled partial\n", pr)
	}
	return nil
}

// labels are the partial runs, one line each ("" when none).
func (p *partialFlag) labels() []string {
	var out []string
	for _, pr := range p.found {
		out = append(out, pr.String())
	}
	return out
}

// labelsIn are the partial runs as a file in folder dir records them: run
// folders (and the first record outside a plan) named relative to dir.
func (p *partialFlag) labelsIn(dir string) []string {
	var out []string
	for _, pr := range p.found {
		rel := export.RelPath(dir, pr.Dir)
		if rest, ok := strings.CutPrefix(pr.FirstOutside, pr.Dir); ok {
			pr.FirstOutside = rel + filepath.ToSlash(rest)
		}
		pr.Dir = rel
		out = append(out, pr.String())
	}
	return out
}

// note is the dataset-card note for partial inputs, or "", for a card in
// folder dir.
func (p *partialFlag) note(dir string) string {
	if len(p.found) == 0 {
		return ""
	}
	return "**Partial**: built from runs lacking planned episodes (with --allow-partial): " + strings.Join(p.labelsIn(dir), "; ") + ". Counts and metrics cover only the episodes present."
}

// withNote appends a note when there is one.
func withNote(notes []string, note string) []string {
	if note == "" {
		return notes
	}
	return append(notes, note)
}
