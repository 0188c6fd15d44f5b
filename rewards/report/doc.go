// Package report writes the checkpoint Pareto report: report.json (the
// points, front, hypervolume and moves, plus per-domain drift and drift
// positions), report.md, a self-contained report.html, and plots made with
// gonum/plot (pareto, per-domain drift bars, drift-position densities) as
// SVG and PNG. Everything it writes is a function of its input: the same
// runs and seed give byte-identical files.
//
// Owns: the report's files (JSON, Markdown, HTML, plots).
// Must not import pairs, export, rollout/dataset or the engine; it renders what metrics and pareto computed.
package report
