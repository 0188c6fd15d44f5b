package synth_test

import (
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The built-in catalogue holds at least 300 seeds over the seven domains,
// each complete and distinct.
func TestBuiltinSeeds(t *testing.T) {
	ss, err := synth.BuiltinSeeds()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(ss), 300)
	perDomain := map[string]int{}
	skills := map[string]bool{}
	descs := map[string]bool{}
	for _, s := range ss {
		perDomain[s.Domain]++
		assert.True(t, strings.HasPrefix(s.ID, s.Domain+"-"), s.ID)
		assert.NotEmpty(t, s.Data, s.ID)
		assert.NotEmpty(t, s.Actions, s.ID)
		assert.GreaterOrEqual(t, len(strings.Fields(s.Description)), 12, "%s: a one-paragraph description", s.ID)
		assert.False(t, skills[s.Domain+"/"+s.Skill], "%s: skill %s repeated in its domain", s.ID, s.Skill)
		skills[s.Domain+"/"+s.Skill] = true
		assert.False(t, descs[s.Description], "%s: description repeated", s.ID)
		descs[s.Description] = true
	}
	for _, d := range scenario.Domains {
		assert.GreaterOrEqual(t, perDomain[d], 40, d)
	}
	assert.Len(t, perDomain, len(scenario.Domains))
}

func TestSeedFileErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"{\"id\":\"a\",\"domain\":\"x\",\"skill\":\"s\",\"description\":\"d\"}\n{bad", "seeds.jsonl:2"},
		{`{"id":"A b","domain":"x","skill":"s","description":"d"}`, `seeds.jsonl:1: id "A b"`},
		{`{"id":"a","domain":"x","skill":"s"}`, "seeds.jsonl:1: a: domain, skill and description are required"},
		{`{"id":"a","domain":"x","skill":"s","description":"d","colour":"red"}`, `seeds.jsonl:1: json: unknown field "colour"`},
		{"# only a comment\n", "seeds.jsonl: no seeds"},
	} {
		_, err := synth.ParseSeeds("seeds.jsonl", strings.NewReader(c.text))
		if assert.Error(t, err, c.text) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
}
