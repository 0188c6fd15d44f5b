package synth

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// reviewCard is one escalated scenario as the reviewer sees it.
type reviewCard struct {
	Outcome
	Final  string // the last candidate's file
	Rounds []reviewRound
}

type reviewRound struct {
	RoundEvidence
	Diff string // unified diff from the previous round's scenario
}

// writeReview writes review.html: one card per escalated scenario with its
// gate evidence and the critic's revisions as diffs, then the failed and
// duplicate seeds. The page is static and self-contained.
func writeReview(dir string, s *Summary) error {
	var cards []reviewCard
	var others []Outcome
	for _, o := range s.Outcomes {
		switch o.Status {
		case StatusEscalated:
			c := reviewCard{Outcome: o}
			prev := ""
			for _, r := range o.Rounds {
				cur := readText(filepath.Join(dir, filepath.FromSlash(r.Scenario)))
				rr := reviewRound{RoundEvidence: r}
				if prev != "" {
					rr.Diff = unified(prev, cur, r.Round)
				}
				prev = cur
				c.Rounds = append(c.Rounds, rr)
				c.Final = r.Scenario
			}
			cards = append(cards, c)
		case StatusFailed, StatusDuplicate, StatusError:
			others = append(others, o)
		}
	}
	var b bytes.Buffer
	if err := reviewPage.Execute(&b, struct {
		S      *Summary
		Cards  []reviewCard
		Others []Outcome
	}{s, cards, others}); err != nil {
		return fmt.Errorf("synth: review page: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, "review.html"), b.Bytes())
}

func readText(name string) string {
	b, err := os.ReadFile(name)
	if err != nil {
		return ""
	}
	return string(b)
}

func unified(a, b string, round int) string {
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(b),
		FromFile: fmt.Sprintf("round %d", round-1), ToFile: fmt.Sprintf("round %d (critic)", round), Context: 2,
	})
	if err != nil {
		return err.Error()
	}
	return d
}

var reviewPage = template.Must(template.New("review").Funcs(template.FuncMap{
	"lines": func(d string) []string { return strings.Split(strings.TrimRight(d, "\n"), "\n") },
	"cls": func(line string) string {
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			return "file"
		case strings.HasPrefix(line, "+"):
			return "add"
		case strings.HasPrefix(line, "-"):
			return "del"
		case strings.HasPrefix(line, "@@"):
			return "hunk"
		}
		return ""
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>antidrift synth: review queue</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#1d2430}
h1{font-size:1.4rem} .card{border:1px solid #c8ced8;border-radius:6px;padding:1rem;margin:1rem 0}
.card h2{font-size:1.1rem;margin:0 0 .4rem} .reason{color:#8a2a14} table{border-collapse:collapse;margin:.4rem 0}
td,th{border:1px solid #dde2ea;padding:.2rem .5rem;text-align:left;vertical-align:top} th{background:#f3f5f8}
pre{background:#f7f8fa;padding:.5rem;overflow:auto;font-size:12px}
pre.diff{white-space:pre-wrap;overflow-wrap:anywhere} .add{background:#e6f6e6} .del{background:#fbe9e7}
.hunk{color:#5b6a86} .file{font-weight:bold} .muted{color:#667}
</style></head><body>
<h1>Review queue: {{len .Cards}} escalated of {{.S.Seeds}} seeds</h1>
<p class="muted">{{.S.Accepted}} accepted, {{.S.Escalated}} escalated, {{.S.Duplicates}} duplicates, {{.S.Undecided}} undecided; {{.S.TotalTokens}} tokens in all.</p>
{{range .Cards}}<section class="card" id="{{.Seed}}">
<h2>{{.Seed}} <span class="muted">({{.Domain}})</span></h2>
<p class="reason"><b>{{.Reason}}</b>: {{.Detail}}</p>
<p>Last candidate: <code>{{.Final}}</code></p>
{{range .Rounds}}<h3>Round {{.Round}}{{if .Repairs}} ({{.Repairs}} repairs){{end}}{{if .Unchanged}} — unchanged{{end}}</h3>
{{if .Unchanged}}<p class="unchanged">The critic returned the scenario it was given, unchanged: it was not checked again; the verdicts below are the previous round's.</p>{{end}}
{{if .Problems}}<p>Checks failed:</p><ul>{{range .Problems}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{with .Battery}}<p>Probe battery: {{.Failed}} of {{.Probes}} probes failed.</p>{{end}}
{{with .Gate}}<table><tr><th>gate</th><th>episodes</th><th>covered</th><th>drifting</th><th>verdict</th></tr>
<tr><td>all probes</td><td>{{.Episodes}}</td><td>{{.Covered}}</td><td>{{.Drifting}}</td><td>{{if .Pass}}pass{{else}}fail: {{.Reason}}{{end}}</td></tr>
{{range $name, $p := .Probes}}<tr><td>{{$name}}</td><td>{{$p.Episodes}}</td><td>{{$p.Covered}}</td><td>{{$p.Drifting}}</td><td></td></tr>{{end}}</table>
<table><tr><th>required call</th><th>rollouts making it</th></tr>{{range $i, $n := .RequiredCovered}}<tr><td>required_calls[{{$i}}]</td><td>{{$n}}</td></tr>{{end}}</table>
<table><tr><th>drift point</th><th>rollouts hitting it</th></tr>{{range $i, $n := .ViolationsHit}}<tr><td>violations[{{$i}}]</td><td>{{$n}}</td></tr>{{end}}</table>{{end}}
{{if .Diff}}<p>Critic's revision:</p><pre class="diff">{{range lines .Diff}}<span class="{{cls .}}">{{.}}</span>
{{end}}</pre>{{end}}
{{end}}</section>
{{else}}<p>No scenario is waiting for review.</p>
{{end}}
{{if .Others}}<h2>Failed, duplicate and undecided seeds</h2><table><tr><th>seed</th><th>result</th><th>reason</th><th>detail</th></tr>
{{range .Others}}<tr><td>{{.Seed}}</td><td>{{.Status}}</td><td>{{.Reason}}{{if .DuplicateOf}} duplicate of {{.DuplicateOf}}{{end}}</td><td>{{.Detail}}</td></tr>{{end}}</table>{{end}}
</body></html>
`))
