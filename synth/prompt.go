package synth

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"text/template"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// The prompts are versioned templates: a change of wording is a new file
// (designer.v2.tmpl), so that a run folder's configuration names the exact
// prompts its scenarios came from.
//
//go:embed prompts/*.tmpl prompts/*.md
var promptFS embed.FS

// Prompt versions in use.
const (
	designerPrompt   = "designer.v1"
	builderPrompt    = "builder.v1"
	criticPrompt     = "critic.v1"
	provisionsPrompt = "provisions.v1"
	formatReference  = "format.v1"
)

// prompts are the parsed templates, by version name.
var prompts = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range []string{designerPrompt, builderPrompt, criticPrompt, provisionsPrompt} {
		out[name] = template.Must(template.New(name).Option("missingkey=error").ParseFS(promptFS, "prompts/"+name+".tmpl"))
	}
	return out
}()

// formatText is the format reference builders and critics are given.
var formatText = func() string {
	b, err := promptFS.ReadFile("prompts/" + formatReference + ".md")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// PromptVersions names each prompt with a hash of its text, for the run
// configuration: a changed prompt is a changed configuration.
func PromptVersions() map[string]string {
	out := map[string]string{}
	for _, name := range []string{designerPrompt, builderPrompt, criticPrompt, provisionsPrompt} {
		b, _ := promptFS.ReadFile("prompts/" + name + ".tmpl")
		out[name] = hashBytes(b)[:12]
	}
	b, _ := promptFS.ReadFile("prompts/" + formatReference + ".md")
	out[formatReference] = hashBytes(b)[:12]
	return out
}

// render executes one named block of a prompt template.
func render(prompt, block string, data any) (string, error) {
	var b bytes.Buffer
	if err := prompts[prompt].ExecuteTemplate(&b, block, data); err != nil {
		return "", fmt.Errorf("synth: prompt %s/%s: %w", prompt, block, err)
	}
	return b.String(), nil
}

// conversation renders a prompt's system and user blocks as messages.
func conversation(prompt string, data any) ([]trajectory.Message, error) {
	sys, err := render(prompt, "system", data)
	if err != nil {
		return nil, err
	}
	user, err := render(prompt, "user", data)
	if err != nil {
		return nil, err
	}
	return []trajectory.Message{
		{Role: trajectory.RoleSystem, Content: sys},
		{Role: trajectory.RoleUser, Content: user},
	}, nil
}

func hashBytes(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
