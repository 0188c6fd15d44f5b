// Package view serves `antidrift view`: a local web app over run folders,
// dataset exports and Pareto report folders, for reading trajectories,
// drift marks, judge views and pairs.
//
// Owns: locating records (a compact per-record summary and the byte range
// of its line, never the records themselves), filtering, sorting and
// paging them server-side, text search over messages, the JSON API and the
// embedded assets (no CDN, no build step).
// Must not import: rollout/engine or anything that runs episodes; it reads
// files and never writes into the folders it serves.
package view
