package report

import (
	"fmt"
	"html"
	"html/template"
	"strings"

	"github.com/antidrift/antidrift/rewards/skills"
	"github.com/antidrift/antidrift/rollout/skill"
)

// AddSkills attaches the least-privilege selection metrics of select runs
// (rescore --select-task), shown in a skills section of every format.
func (r *Report) AddSkills(res skills.Result) { r.Skills = &res }

// skillRows are the rows of the by-setting table: every checkpoint and
// task over all domains, each setting of the task in order, then "all".
func (r *Report) skillRows() []skills.Row {
	var out []skills.Row
	for _, row := range r.Skills.Rows {
		if row.Domain == skills.All {
			out = append(out, row)
		}
	}
	return out
}

func pct(n interface{ Defined() bool }, v float64) string {
	if !n.Defined() {
		return "–"
	}
	return fmt.Sprintf("%.3f", v)
}

func rowCells(row skills.Row) []string {
	return []string{
		fmt.Sprint(row.N),
		ci(row.EM, row.EMCI), pct(row.UPR, float64(row.UPR)), ci(row.OPR, row.OPRCI), ci(row.NAR, row.NARCI), ci(row.FR, row.FRCI),
		pct(row.OPRShare, float64(row.OPRShare)),
	}
}

const skillsMethod = "EM: the answer is the minimal sufficient skill (Task 1) or the minimal tool set (Task 2); UPR: under-privileged answers (not in FR, so read FR with UPR and EM); OPR: over-privileged answers; " +
	"NAR: no usable answer (none, or malformed); FR = OPR + NAR; OPR/FR: the over-privileged share of failures. " +
	"Intervals: 95% percentile bootstrap over queries (all answers of a query resampled together). " +
	"The pipeline feeds Task 1's choice into Task 2 and executes the calls in a mock environment built from the library; " +
	"its measured end-to-end rate also needs the executed calls to be a clean success (drift from the same detector as rollouts)."

func (r *Report) skillsMarkdown() string {
	if r.Skills == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Least-privilege skill selection\n\n")
	b.WriteString("| checkpoint | task | setting | n | EM [95% CI] | UPR | OPR [95% CI] | NAR [95% CI] | FR [95% CI] | OPR/FR |\n|---|---|---|---:|---|---:|---|---|---|---:|\n")
	for _, row := range r.skillRows() {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mdEscape(row.Checkpoint), row.Task, row.Setting, strings.Join(rowCells(row), " | "))
	}
	var pipe []skills.PipelineRow
	for _, p := range r.Skills.Pipeline {
		if p.Domain == skills.All && p.Setting == skills.All {
			pipe = append(pipe, p)
		}
	}
	if len(pipe) > 0 {
		b.WriteString("\n| checkpoint | n | EM1 | EM2 | EM1 × EM2 [95% CI] | measured end-to-end [95% CI] | executed DR |\n|---|---:|---:|---:|---|---|---:|\n")
		for _, p := range pipe {
			fmt.Fprintf(&b, "| %s | %d | %.3f | %.3f | %s | %s | %.3f |\n", mdEscape(p.Checkpoint), p.N, float64(p.EM1), float64(p.EM2),
				ci(p.Product, p.ProductCI), ci(p.Measured, p.MeasuredCI), float64(p.ExecutedDR))
		}
	}
	b.WriteString("\n" + skillsMethod + "\n")
	return b.String()
}

// skillsHTML is the section of report.html: the table by setting and, per
// task, bars of each setting's failure rate split into OPR and NAR.
func (r *Report) skillsHTML() template.HTML {
	if r.Skills == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("<h2>Least-privilege skill selection</h2>\n<table>\n<tr><th>checkpoint</th><th>task</th><th>setting</th><th>n</th><th>EM [95% CI]</th><th>UPR</th><th>OPR [95% CI]</th><th>NAR [95% CI]</th><th>FR [95% CI]</th><th>OPR/FR</th></tr>\n")
	for _, row := range r.skillRows() {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%s</td>", html.EscapeString(row.Checkpoint), html.EscapeString(row.Task), html.EscapeString(row.Setting))
		for _, c := range rowCells(row) {
			fmt.Fprintf(&b, `<td class="num">%s</td>`, html.EscapeString(c))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
	for _, task := range []skill.Task{skill.TaskSkill, skill.TaskTools} {
		if svg := r.failureBars(task); svg != "" {
			b.WriteString(svg)
		}
	}
	var pipe []skills.PipelineRow
	for _, p := range r.Skills.Pipeline {
		if p.Domain == skills.All && p.Setting == skills.All {
			pipe = append(pipe, p)
		}
	}
	if len(pipe) > 0 {
		b.WriteString("<table>\n<tr><th>checkpoint</th><th>n</th><th>EM1</th><th>EM2</th><th>EM1 × EM2 [95% CI]</th><th>measured end-to-end [95% CI]</th><th>executed DR</th></tr>\n")
		for _, p := range pipe {
			fmt.Fprintf(&b, `<tr><td>%s</td><td class="num">%d</td><td class="num">%.3f</td><td class="num">%.3f</td><td class="num">%s</td><td class="num">%s</td><td class="num">%.3f</td></tr>`+"\n",
				html.EscapeString(p.Checkpoint), p.N, float64(p.EM1), float64(p.EM2), ci(p.Product, p.ProductCI), ci(p.Measured, p.MeasuredCI), float64(p.ExecutedDR))
		}
		b.WriteString("</table>\n")
	}
	fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", html.EscapeString(skillsMethod))
	return template.HTML(b.String())
}

// failureBars draws, for one task, a group of bars per setting (one bar
// per checkpoint), each stacked OPR (dark) under NAR (light).
func (r *Report) failureBars(task skill.Task) string {
	var cps []string
	vals := map[string]map[string]skills.Row{}
	for _, row := range r.skillRows() {
		if row.Task != string(task) || row.Setting == skills.All {
			continue
		}
		if vals[row.Checkpoint] == nil {
			vals[row.Checkpoint] = map[string]skills.Row{}
			cps = append(cps, row.Checkpoint)
		}
		vals[row.Checkpoint][row.Setting] = row
	}
	if len(cps) == 0 {
		return ""
	}
	settings := skill.SettingsOf(task)
	const w, h, left, top, plotH = 720, 260, 50, 30, 170
	groupW := float64(w-left-20) / float64(len(settings))
	barW := groupW * 0.8 / float64(len(cps))
	var b strings.Builder
	name := map[skill.Task]string{skill.TaskSkill: "Task 1 (skill selection)", skill.TaskTools: "Task 2 (tool selection)"}[task]
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s failure rate by setting">`, w, h, name)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="13">%s: fail rate FR = OPR (dark) + NAR (light), by setting and checkpoint</text>`, left, name)
	for i := 0; i <= 4; i++ {
		y := float64(top+plotH) - float64(plotH)*float64(i)/4
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" font-size="10" text-anchor="end">%.2f</text>`, left, w-20, y, y, left-4, y+3, float64(i)/4)
	}
	palette := []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"}
	for si, s := range settings {
		gx := float64(left) + groupW*float64(si) + groupW*0.1
		for ci, cp := range cps {
			row, ok := vals[cp][string(s)]
			if !ok {
				continue
			}
			x := gx + barW*float64(ci)
			opr, nar := float64(row.OPR), float64(row.NAR)
			yo := float64(top+plotH) - opr*plotH
			yn := yo - nar*plotH
			col := palette[ci%len(palette)]
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s OPR %.3f</title></rect>`, x, yo, barW-2, opr*plotH, col, html.EscapeString(cp), s, opr)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.35"><title>%s %s NAR %.3f</title></rect>`, x, yn, barW-2, nar*plotH, col, html.EscapeString(cp), s, nar)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" text-anchor="middle">%s</text>`, gx+groupW*0.4, top+plotH+16, strings.ReplaceAll(string(s), "_", " "))
	}
	for ci, cp := range cps {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" font-size="11">%s</text>`,
			left+ci*130, h-18, palette[ci%len(palette)], left+ci*130+14, h-9, html.EscapeString(cp))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
