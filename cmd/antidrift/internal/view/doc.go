// Package view serves `antidrift view`: a local web app over run folders,
// dataset exports and Pareto report folders, for reading trajectories,
// drift marks, judge views and pairs.
//
// Owns: locating records (a compact per-record summary and the byte range
// of its line, never the records themselves), filtering, sorting and
// paging them server-side, text search over messages, following runs still
// being written (live.go), pair diffs, dataset table queries, the JSON API,
// the embedded assets (no CDN, no build step) and the static export
// (export.go: the same app reading data scripts instead of the API).
// Must not import: rollout/engine or anything that runs episodes; it reads
// files and never writes into the folders it serves (an export writes
// only into its own new folder).
package view
