// Package hftok counts tokens with a Hugging Face tokenizer.json, through
// the pure-Go github.com/sugarme/tokenizer library (no cgo), for exact
// token lengths in the exported training tables (export.TokenCounter).
//
// It owns reading a tokenizer.json and counting the tokens of chat
// messages and tool schemas the way the tokenizer-free estimate in
// rollout/dataset measures them: the texts are tokenized exactly; the chat
// template's markers are a fixed allowance per message and tool, since
// templates differ and none is rendered here.
//
// It must not import the CLI, the rollout engine or policies.
package hftok
