package skill

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mutated returns the built-in email library in file form after edit.
func mutated(t *testing.T, edit func(l *Library)) []byte {
	t.Helper()
	src, err := Builtin("email")
	require.NoError(t, err)
	b, err := Marshal(src)
	require.NoError(t, err)
	var l Library
	require.NoError(t, json.Unmarshal(b, &l))
	// A few queries are enough to trip each rule, and keep the corpus fast.
	l.Queries = l.Queries[:8]
	edit(&l)
	out, err := Marshal(&l)
	require.NoError(t, err)
	return out
}

func TestValidatorNamesFileAndPath(t *testing.T) {
	cases := []struct {
		name string
		edit func(l *Library)
		want string
	}{
		{"unknown skill tool", func(l *Library) { l.Skills[0].Tools[0] = "no_such_tool" }, "bad.json: skills[0].tools[0]: unknown tool \"no_such_tool\""},
		{"skill privilege", func(l *Library) { l.Skills[0].Privilege = L3Execute }, "bad.json: skills[0].privilege: is 3 but the skill's highest tool privilege is 1"},
		{"privilege wording", func(l *Library) { l.Queries[0].Request += " Use the least privileged skill." }, "bad.json: queries[0].request: privilege wording"},
		{"wrong ground-truth skill", func(l *Library) { l.Queries[0].Skill = "mail-assistant" }, "bad.json: queries[0].skill: is \"mail-assistant\" but the minimal sufficient skill is \"inbox-glance\""},
		{"wrong ground-truth tools", func(l *Library) { l.Queries[0].Tools = []string{"mail_assistant"} }, "bad.json: queries[0].tools: is {mail_assistant} but the minimal tool set is {search_mail}"},
		{"ambiguous minimal skill", func(l *Library) {
			s := l.Skills[0]
			s.Name = "inbox-glance-copy"
			l.Skills = append(l.Skills, s)
		}, "minimal sufficient skill is not unique: inbox-glance, inbox-glance-copy"},
		{"no higher alternative", func(l *Library) {
			l.Queries[0].Needs = []string{"mailbox.delegate"}
			l.Queries[0].Skill = "mailbox-admin"
		}, "bad.json: queries[0].needs: no higher-privilege skill also covers the needs"},
		{"unknown need", func(l *Library) { l.Queries[0].Needs = []string{"msg.teleport"} }, "bad.json: queries[0].needs[0]: no tool provides \"msg.teleport\""},
		{"call args", func(l *Library) { l.Queries[0].Calls[0].Args = map[string]any{"identifier": "x"} }, "bad.json: queries[0].calls[0].args:"},
		{"resource outside data", func(l *Library) { l.Queries[1].Calls[0].Args = map[string]any{"message": "M-0001"} }, "bad.json: queries[1].calls[0].args: touches message:M-0001, which the query's data does not name"},
		{"broad action on one item", func(l *Library) {
			l.Queries[1].Task, l.Queries[1].Setting = TaskTools, BroadActionJustified
		}, "bad.json: queries[1].data: broad_action_justified acts on several named items, not 1"},
		{"setting of the other task", func(l *Library) { l.Queries[0].Setting = ConvenienceSensitive }, "bad.json: queries[0].setting: \"convenience_sensitive\" is not a setting of task skill"},
		{"duplicate request", func(l *Library) { l.Queries[1].Request = l.Queries[0].Request }, "bad.json: queries[1].request: same request as queries[0]"},
		{"schema", func(l *Library) { l.Tools[0].Risk = "extreme" }, "bad.json: tools[0].risk:"},
		// Missing references are named first; the ground truth, which needs
		// them, is not computed (it used to panic on a nil tool).
		{"query tool missing", func(l *Library) { l.Queries[0].Tools[0] = "gone_tool" }, "bad.json: queries[0].tools[0]: unknown tool \"gone_tool\""},
		{"call tool missing", func(l *Library) { l.Queries[0].Calls[0].Tool = "gone_tool" }, "bad.json: queries[0].calls[0].tool: unknown tool \"gone_tool\""},
		{"query skill missing", func(l *Library) { l.Queries[0].Skill = "gone-skill" }, "bad.json: queries[0].skill: unknown skill \"gone-skill\""},
		{"given skill missing", func(l *Library) { l.Queries[0].GivenSkill = "gone-skill" }, "bad.json: queries[0].given_skill: unknown skill \"gone-skill\""},
		{"a tool every skill names removed", func(l *Library) { l.Tools = l.Tools[1:] }, "bad.json: skills[0].tools[0]: unknown tool \"count_messages\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, ps := Parse("bad.json", mutated(t, tc.edit))
			assert.Nil(t, l)
			require.NotEmpty(t, ps)
			assert.Contains(t, ps.Error(), tc.want)
			if strings.Contains(tc.want, "unknown") {
				assert.NotContains(t, ps.Error(), "minimal", "only the references while they are broken")
			}
		})
	}
	_, ps := Parse("broken.json", []byte("{\n  \"name\": \"x\",\n  oops\n}"))
	require.Len(t, ps, 1)
	assert.True(t, strings.HasPrefix(ps[0].String(), "broken.json:3:"), ps[0].String())
}

func TestDocumentedExampleLibraryValidates(t *testing.T) {
	l, err := LoadFile("testdata/notes.json")
	require.NoError(t, err)
	assert.Equal(t, "note-reader", l.Queries[0].Skill)
	assert.Equal(t, []string{"manage_notes"}, l.ConvenientAlternative(&l.Queries[1]))
}
