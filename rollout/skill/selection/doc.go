// Package selection runs the least-privilege selection tasks of a skill
// library as episodes of a run folder: Task 1 (choose a skill), Task 2
// (list tool calls given a skill) and the pipeline (Task 1's choice fed
// into Task 2, whose calls are executed in a mock environment built from
// the library and labelled by the drift detector every rollout uses). It
// plans, shards and resumes through rollout/engine and rollout/store like
// rollout does.
//
// It owns the selection episode and the library's mock environment. It
// must not import rewards, pairs or export.
package selection
