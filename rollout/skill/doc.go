// Package skill defines skill libraries for least-privilege skill selection
// (the FORTIS benchmark's two tasks): per domain, tools and skills placed on
// privilege levels L0 Observe … L4 Bulk/Admin with deliberate overlap, and
// queries with their ground truth and setting. It loads and validates
// libraries (the built-in ones are embedded JSON files, composed by
// internal/fortisgen and checked in), renders the two tasks' prompts,
// parses answers tolerantly and labels them.
//
// It owns the format, the validator, the built-in libraries, the prompts and
// the labelling rule. It must not import the engine, a policy backend, the
// environment or anything under rewards, pairs or export: runners, metrics
// and datasets import it, never the reverse.
package skill
