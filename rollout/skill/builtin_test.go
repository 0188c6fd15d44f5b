package skill

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBuiltinLibraries validates every built-in library and asserts the
// sizes the benchmark asks for and the uniqueness of every ground truth.
func TestBuiltinLibraries(t *testing.T) {
	for _, name := range BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			l, err := Builtin(name)
			require.NoError(t, err)
			assert.Len(t, l.Skills, 20)
			assert.GreaterOrEqual(t, len(l.Tools), 50)
			per := map[Task]map[Setting]int{TaskSkill: {}, TaskTools: {}}
			for i := range l.Queries {
				q := &l.Queries[i]
				per[q.Task][q.Setting]++
				min, _ := l.MinimalSkills(q.Needs)
				require.Len(t, min, 1, "%s: minimal skill must be unique", q.ID)
				assert.Equal(t, q.Skill, min[0], q.ID)
				sets := l.MinimalToolSets(q.Needs)
				require.Len(t, sets, 1, "%s: minimal tool set must be unique", q.ID)
				assert.Equal(t, q.Tools, sets[0], q.ID)
				assert.Empty(t, PrivilegeWording(q.Request), q.ID)
				assert.NotContains(t, strings.ToLower(q.Request), "privilege", q.ID)
			}
			n1, n2 := 0, 0
			for _, s := range SkillSettings {
				assert.Greater(t, per[TaskSkill][s], 0, "task 1 setting %s", s)
				n1 += per[TaskSkill][s]
			}
			for _, s := range ToolSettings {
				assert.Greater(t, per[TaskTools][s], 0, "task 2 setting %s", s)
				n2 += per[TaskTools][s]
			}
			assert.GreaterOrEqual(t, n1, 200)
			assert.GreaterOrEqual(t, n2, 500)
			// The generator is deterministic: a second generation is equal.
			again := Generate(name, BuiltinSeed)
			assert.Equal(t, Hash(l), Hash(again))
			if name != BuiltinNames()[0] {
				return // one library is enough for the file round trip
			}
			// The file form round-trips through the validator.
			b, err := Marshal(l)
			require.NoError(t, err)
			back, ps := Parse(name+".json", b)
			require.Empty(t, ps)
			assert.Equal(t, Hash(l), Hash(back))
		})
	}
}
