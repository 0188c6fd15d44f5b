package leastpriv

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/skill"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Pair types of least-privilege rows.
const (
	TypeSkill = "least_privilege_skill" // Task 1 answers
	TypeTools = "least_privilege_tools" // Task 2 answers
)

// Constructed marks the side of a pair the library supplied: its
// checkpoint column, and the prefix of its traj_id column.
const Constructed = "constructed"

// Options control pairing.
type Options struct {
	MaxPerQuery int // pairs per query and checkpoint (default 4)
	MaxReuse    int // times one answer may appear (default 2)
	Seed        int64
	Ratios      dataset.Ratios
	// Construct fills a missing side from the library (default on in DefaultOptions).
	Construct bool
	// Lambda weighs the privilege gap in the reward: R = exact - Lambda *
	// max(0, chosen - expected privilege) / 4, as the privilege scheme.
	Lambda float64
}

// DefaultOptions are the command's defaults.
func DefaultOptions() Options {
	return Options{MaxPerQuery: 4, MaxReuse: 2, Seed: 1, Ratios: dataset.DefaultRatios, Construct: true, Lambda: 0.5}
}

// Stats count what Build did.
type Stats struct {
	Queries            int `json:"queries"`
	Answers            int `json:"answers"`
	Pairs              int `json:"pairs"`
	FromRollouts       int `json:"pairs_from_answers"`
	ConstructedRejects int `json:"pairs_with_constructed_rejected"`
	ConstructedChosen  int `json:"pairs_with_constructed_chosen"`
	KTO                int `json:"kto_rows"`
}

// side is one answer of a pair.
type side struct {
	trajID, checkpoint string
	prompt             []trajectory.Message
	answer             trajectory.Message
	turn               int
	reward             float64
	exact, over        bool
	domain             string
	rec                *trajectory.Record // nil when constructed
}

func stageOf(r *trajectory.Record) *trajectory.SelectionStage {
	if r.Selection == nil {
		return nil
	}
	switch r.Selection.Task {
	case string(skill.TaskSkill):
		return r.Selection.Skill
	case string(skill.TaskTools):
		return r.Selection.Tools
	}
	return nil
}

func (o Options) reward(st *trajectory.SelectionStage) float64 {
	r := 0.0
	if st.Label == string(skill.ExactMatch) {
		r = 1
	}
	if gap := st.ChosenPrivilege - st.ExpectedPrivilege; gap > 0 && st.Label == string(skill.OverPrivilege) {
		r -= o.Lambda * float64(gap) / 4
	}
	return r
}

// Build pairs the selection answers of one query group at a time. Records
// of a query are read from ix; lib must be the library the runs used.
func Build(ix *dataset.Index, lib *skill.Library, o Options, dpo func(*dataset.DPORow) error, kto func(*dataset.KTORow) error) (*Stats, error) {
	if o.MaxPerQuery <= 0 {
		o.MaxPerQuery = 4
	}
	if o.MaxReuse <= 0 {
		o.MaxReuse = 2
	}
	st := &Stats{}
	for _, qid := range ix.Scenarios() {
		recs, err := ix.Load(qid)
		if err != nil {
			return st, err
		}
		byCP := map[string][]*trajectory.Record{}
		var cps []string
		for _, r := range recs {
			if stageOf(r) == nil || r.Status != trajectory.StatusCompleted {
				continue
			}
			if byCP[r.Checkpoint] == nil {
				cps = append(cps, r.Checkpoint)
			}
			byCP[r.Checkpoint] = append(byCP[r.Checkpoint], r)
		}
		if len(cps) == 0 {
			continue
		}
		q := query(lib, qid)
		if q == nil {
			return st, fmt.Errorf("leastpriv: query %s is not in library %s (run with another library?)", qid, lib.Name)
		}
		st.Queries++
		sort.Slice(cps, func(i, j int) bool { return ix.LessCheckpoint(cps[i], cps[j]) })
		for _, cp := range cps {
			if err := o.pairQuery(lib, q, cp, byCP[cp], st, dpo, kto); err != nil {
				return st, err
			}
		}
	}
	return st, nil
}

func query(lib *skill.Library, id string) *skill.Query {
	for i := range lib.Queries {
		if lib.Queries[i].ID == id {
			return &lib.Queries[i]
		}
	}
	return nil
}

func (o Options) pairQuery(lib *skill.Library, q *skill.Query, cp string, recs []*trajectory.Record, st *Stats,
	dpo func(*dataset.DPORow) error, kto func(*dataset.KTORow) error) error {
	var chosen, rejected []*side
	task := recs[0].Selection.Task
	for _, r := range recs {
		if r.Selection.Task != task {
			continue
		}
		stg := stageOf(r)
		st.Answers++
		if stg.Turn < 2 || stg.Turn >= len(r.Messages) {
			return fmt.Errorf("leastpriv: %s: selection turn %d outside the messages", r.TrajID, stg.Turn)
		}
		s := &side{trajID: r.TrajID, checkpoint: r.Checkpoint, prompt: r.Messages[stg.Turn-2 : stg.Turn], answer: r.Messages[stg.Turn],
			turn: stg.Turn - (stg.Turn - 2), reward: o.reward(stg), exact: stg.Label == string(skill.ExactMatch),
			over: stg.Label == string(skill.OverPrivilege), domain: r.Domain, rec: r}
		switch {
		case s.exact:
			chosen = append(chosen, s)
		case s.over:
			rejected = append(rejected, s)
		}
	}
	// KTO: every exact and over-privileged answer, as it was given.
	for _, s := range append(append([]*side(nil), chosen...), rejected...) {
		if err := kto(o.ktoRow(q, s)); err != nil {
			return err
		}
		st.KTO++
	}
	if o.Construct && len(rejected) == 0 {
		if s := constructRejected(lib, q, skill.Task(task), o); s != nil {
			rejected = []*side{s}
			if err := kto(o.ktoRow(q, s)); err != nil {
				return err
			}
			st.KTO++
		}
	}
	if o.Construct && len(chosen) == 0 && len(rejected) > 0 {
		chosen = []*side{constructChosen(lib, q, skill.Task(task))}
	}
	if len(chosen) == 0 || len(rejected) == 0 {
		return nil
	}
	// Deterministic, seeded order; pairs round-robin with bounded reuse.
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s", q.ID, cp)
	rng := rand.New(rand.NewPCG(uint64(o.Seed), h.Sum64()))
	rng.Shuffle(len(chosen), func(i, j int) { chosen[i], chosen[j] = chosen[j], chosen[i] })
	rng.Shuffle(len(rejected), func(i, j int) { rejected[i], rejected[j] = rejected[j], rejected[i] })
	used := map[*side]int{}
	seen := map[string]bool{}
	n := 0
	for i := 0; n < o.MaxPerQuery && i < len(chosen)*len(rejected); i++ {
		c, r := chosen[i%len(chosen)], rejected[(i/len(chosen)+i)%len(rejected)]
		if used[c] >= o.MaxReuse || used[r] >= o.MaxReuse {
			continue
		}
		row := o.dpoRow(q, task, c, r)
		if seen[row.PairID] {
			continue
		}
		seen[row.PairID] = true
		used[c]++
		used[r]++
		if err := dpo(row); err != nil {
			return err
		}
		n++
		st.Pairs++
		switch {
		case c.rec == nil:
			st.ConstructedChosen++
		case r.rec == nil:
			st.ConstructedRejects++
		default:
			st.FromRollouts++
		}
	}
	return nil
}

// constructedPrompt renders the prompt the task would send.
func constructedPrompt(lib *skill.Library, q *skill.Query, task skill.Task) []trajectory.Message {
	if task == skill.TaskSkill {
		return []trajectory.Message{{Role: trajectory.RoleSystem, Content: skill.SkillSystem}, {Role: trajectory.RoleUser, Content: skill.SkillPrompt(lib, q)}}
	}
	return []trajectory.Message{{Role: trajectory.RoleSystem, Content: skill.ToolsSystem}, {Role: trajectory.RoleUser, Content: skill.ToolsPrompt(lib, q, q.Given())}}
}

func constructedID(q *skill.Query, what string) string {
	h := sha256.Sum256([]byte(q.ID + "\x00" + what))
	return Constructed + ":" + hex.EncodeToString(h[:8])
}

// constructRejected is the over-privileged answer the library offers: for
// Task 1 the broadest skill that also covers the request, for Task 2 the
// convenient broad tool path. Nil when the query has none (a justified
// broad action).
func constructRejected(lib *skill.Library, q *skill.Query, task skill.Task, o Options) *side {
	gtSkill := lib.Skill(q.Skill)
	s := &side{checkpoint: Constructed, prompt: constructedPrompt(lib, q, task), turn: 2, over: true, domain: lib.Domain}
	if task == skill.TaskSkill {
		suff := lib.SufficientSkills(q.Needs)
		top := suff[len(suff)-1]
		if top.Privilege <= gtSkill.Privilege {
			return nil
		}
		s.answer = trajectory.Message{Role: trajectory.RoleAssistant, Content: top.Name}
		s.reward = -o.Lambda * float64(top.Privilege-gtSkill.Privilege) / 4
		s.trajID = constructedID(q, "rejected:"+top.Name)
		return s
	}
	alt := lib.ConvenientAlternative(q)
	if alt == nil {
		return nil
	}
	s.answer = trajectory.Message{Role: trajectory.RoleAssistant, Content: skill.ToolsAnswer(skill.CallsFor(lib, q, alt))}
	s.reward = -o.Lambda * float64(lib.MaxPrivilege(alt)-lib.MaxPrivilege(q.Tools)) / 4
	s.trajID = constructedID(q, "rejected:tools")
	return s
}

// constructChosen is the ground truth written as an answer.
func constructChosen(lib *skill.Library, q *skill.Query, task skill.Task) *side {
	s := &side{checkpoint: Constructed, prompt: constructedPrompt(lib, q, task), turn: 2, exact: true, reward: 1, domain: lib.Domain}
	if task == skill.TaskSkill {
		s.answer = trajectory.Message{Role: trajectory.RoleAssistant, Content: q.Skill}
	} else {
		s.answer = trajectory.Message{Role: trajectory.RoleAssistant, Content: skill.ToolsAnswer(q.Calls)}
	}
	s.trajID = constructedID(q, "chosen")
	return s
}

func pairType(task string) string {
	if task == string(skill.TaskSkill) {
		return TypeSkill
	}
	return TypeTools
}

func (o Options) dpoRow(q *skill.Query, task string, c, r *side) *dataset.DPORow {
	h := sha256.Sum256([]byte(c.trajID + "\x00" + r.trajID))
	row := &dataset.DPORow{
		Prompt: dataset.Messages(c.prompt), Chosen: dataset.Messages([]trajectory.Message{c.answer}),
		Rejected: dataset.Messages([]trajectory.Message{r.answer}), Tools: []json.RawMessage{},
		PairID: hex.EncodeToString(h[:8]), ScenarioID: q.ID, Domain: domainOf(c, r), Split: dataset.SplitOf(q.ID, o.Ratios, o.Seed),
		PairType: pairType(task), ChosenTrajID: c.trajID, RejectedTrajID: r.trajID,
		ChosenCheckpoint: c.checkpoint, RejectedCheckpoint: r.checkpoint, DivergenceStep: 2,
		ChosenReward: c.reward, RejectedReward: r.reward, RewardGap: c.reward - r.reward,
		DriftTypes: []string{}, ViolationKinds: []string{}, Provisions: []string{}, SchemaVersion: dataset.SchemaVersion,
	}
	if task == string(skill.TaskTools) {
		row.DriftTypes = []string{"tool"} // a tool above the task's need: tool drift by the boundary rule
	}
	row.ChosenTrain, row.RejectedTrain = dataset.TrainMask(row.Chosen), dataset.TrainMask(row.Rejected)
	row.PromptTokensEst = dataset.EstimatePromptTokens(row.Prompt, row.Tools)
	row.ChosenTokensEst, row.RejectedTokensEst = dataset.EstimateTokens(row.Chosen), dataset.EstimateTokens(row.Rejected)
	return row
}

func domainOf(sides ...*side) string {
	for _, s := range sides {
		if s.domain != "" {
			return s.domain
		}
	}
	return ""
}

func (o Options) ktoRow(q *skill.Query, s *side) *dataset.KTORow {
	d := domainOf(s)
	row := &dataset.KTORow{
		Prompt: dataset.Messages(s.prompt), Completion: dataset.Messages([]trajectory.Message{s.answer}),
		Label: s.exact, Tools: []json.RawMessage{}, Turn: int64(len(s.prompt)), TrajID: s.trajID, ScenarioID: q.ID, Domain: d,
		Split: dataset.SplitOf(q.ID, o.Ratios, o.Seed), Checkpoint: s.checkpoint, Success: s.exact, Drift: s.over,
		Reward: s.reward, SchemaVersion: dataset.SchemaVersion,
	}
	row.PromptTokensEst, row.CompletionTokensEst = dataset.EstimatePromptTokens(row.Prompt, row.Tools), dataset.EstimateTokens(row.Completion)
	return row
}
