package mdtext

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"dpo-2":                        "dpo-2",
		"a|b":                          `a\|b`,
		"<img src=x onerror=alert(1)>": `\<img src=x onerror=alert(1)\>`,
		"[x](javascript:1)":            `\[x\](javascript:1)`,
		"**bold** _i_ `c`":             `\*\*bold\*\* \_i\_ \` + "`c\\`",
		"line\nnext\r\tx\x1b[31m":      `line next  x \[31m`,
		`back\slash &amp;`:             `back\\slash \&amp;`,
	} {
		assert.Equal(t, want, Escape(in), in)
	}
}

func TestCode(t *testing.T) {
	assert.Equal(t, "`antidrift rollout`", Code("antidrift rollout"))
	assert.Equal(t, "``a`b``", Code("a`b"))
	assert.Equal(t, "`` `x ``", Code("`x"))
	assert.Equal(t, "`a b`", Code("a\nb"))
}
