package provisions

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuiltinCatalogue(t *testing.T) {
	c := Builtin()
	require.GreaterOrEqual(t, len(c.Provisions), 30)
	jur := map[string]int{}
	for _, p := range c.Provisions {
		jur[p.Jurisdiction]++
		assert.NotEmpty(t, p.Summary, p.ID)
		assert.Greater(t, p.Weight, 0.0, p.ID)
	}
	assert.GreaterOrEqual(t, len(jur), 4, "jurisdictions: %v", jur)
	p, ok := c.Lookup("GDPR-5-1-c")
	require.True(t, ok)
	assert.Equal(t, "Art. 5(1)(c)", p.Article)
	assert.Equal(t, []string{"CN", "EU"}, c.Jurisdictions([]string{"PIPL-6", "GDPR-5-1-b", "GDPR-5-1-c", "nope"}))
}

func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"dup":     {`{"provisions":[{"id":"A","jurisdiction":"EU","instrument":"x","article":"1","weight":1},{"id":"A","jurisdiction":"EU","instrument":"x","article":"1","weight":1}]}`, `cat.json: provisions[1].id: "A" already used by provisions[0]`},
		"neg":     {`{"provisions":[{"id":"A","jurisdiction":"EU","instrument":"x","article":"1","weight":-1}]}`, `cat.json: provisions[0].weight: must be >= 0, got -1`},
		"unknown": {`{"provisions":[],"extra":1}`, `cat.json: json: unknown field "extra"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("cat.json", []byte(tc.in))
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}
