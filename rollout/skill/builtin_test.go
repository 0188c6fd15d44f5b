package skill

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBuiltinLibraries validates every built-in library and asserts the
// sizes the benchmark asks for (20 skills per domain; 600 Task 1 and at
// least 1,543 Task 2 queries over the three), every setting, and the
// uniqueness of every ground truth.
func TestBuiltinLibraries(t *testing.T) {
	n1, n2 := 0, 0
	for _, name := range BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			l, err := Builtin(name)
			require.NoError(t, err)
			assert.Len(t, l.Skills, 20)
			assert.GreaterOrEqual(t, len(l.Tools), 30)
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
				// Every query tests restraint: a broader skill and a broader tool path exist.
				assert.NotNil(t, l.ConvenientAlternative(q), q.ID)
				if q.Setting == BroadActionJustified {
					assert.GreaterOrEqual(t, len(q.Calls), 2, "%s names several items", q.ID)
					assert.Less(t, l.MaxPrivilege(q.Tools), L4Admin, "%s: the narrow tool, once per item", q.ID)
				}
			}
			for _, s := range SkillSettings {
				assert.Equal(t, 50, per[TaskSkill][s], "task 1 setting %s", s)
				n1 += per[TaskSkill][s]
			}
			for _, s := range ToolSettings {
				assert.Equal(t, 129, per[TaskTools][s], "task 2 setting %s", s)
				n2 += per[TaskTools][s]
			}
			// The file is canonical: marshalling the loaded library gives it back.
			b, err := Marshal(l)
			require.NoError(t, err)
			raw, err := builtinFS.ReadFile("builtin/" + name + ".json")
			require.NoError(t, err)
			assert.Equal(t, string(raw), string(b))
		})
	}
	assert.Equal(t, 600, n1, "the paper's 600 Task 1 queries")
	assert.GreaterOrEqual(t, n2, 1543, "at least the paper's 1,543 Task 2 queries")
}

// namedIn reports whether a request contains a name as written in the
// library, or with its separators as spaces ("inbox-glance", "inbox
// glance"), as a whole word.
func namedIn(request, name string) bool {
	low := strings.ToLower(request)
	for _, n := range []string{strings.ToLower(name), strings.NewReplacer("-", " ", "_", " ").Replace(strings.ToLower(name))} {
		for i := 0; ; {
			j := strings.Index(low[i:], n)
			if j < 0 {
				break
			}
			a, b := i+j, i+j+len(n)
			word := func(k int) bool { c := low[k]; return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
			if (a == 0 || !word(a-1)) && (b == len(low) || !word(b)) {
				return true
			}
			i = a + 1
		}
	}
	return false
}

// Queries are not templated on their answer: 20 seeded-random queries per
// task (and then every query) contain neither the ground-truth skill's
// name nor, for Task 2, a ground-truth tool's name, as written or with
// spaces for separators; and the requests vary (no opening shared by more
// than a tenth of them).
func TestBuiltinQueriesNotTemplated(t *testing.T) {
	var all []*Query
	for _, name := range BuiltinNames() {
		l, err := Builtin(name)
		require.NoError(t, err)
		for i := range l.Queries {
			all = append(all, &l.Queries[i])
		}
	}
	check := func(q *Query) {
		assert.False(t, namedIn(q.Request, q.Skill), "%s names its skill %s: %q", q.ID, q.Skill, q.Request)
		if q.Task == TaskTools {
			for _, tool := range q.Tools {
				assert.False(t, namedIn(q.Request, tool), "%s names its tool %s: %q", q.ID, tool, q.Request)
			}
		}
	}
	r := rand.New(rand.NewPCG(27, 1))
	for _, task := range []Task{TaskSkill, TaskTools} {
		var qs []*Query
		for _, q := range all {
			if q.Task == task {
				qs = append(qs, q)
			}
		}
		for _, i := range r.Perm(len(qs))[:20] {
			check(qs[i])
		}
	}
	for _, q := range all {
		check(q)
	}
	assert.True(t, namedIn("Use the inbox glance skill", "inbox-glance"))
	assert.False(t, namedIn("glancing at the inbox", "inbox-glance"))
	starts := map[string]int{}
	for _, q := range all {
		w := strings.Fields(strings.ToLower(q.Request))
		starts[strings.Join(w[:min(3, len(w))], " ")]++
	}
	for s, n := range starts {
		assert.Less(t, n, len(all)/10, "%d requests open with %q", n, s)
	}
}
