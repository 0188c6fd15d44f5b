package pairs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// check makes every check of candidate but the dedup key. Two items of
// the same sig give the same answer (builder.sig): what the checks read is
// in the sig.
func (b *builder) check(c, r *item, typ string) (sp span, why int8, err error) {
	cm, rm := c.m, r.m
	cn, rn := len(cm.keys), len(rm.keys)
	if b.opt.CrossCheckpoint && c.ckpt == r.ckpt {
		return sp, reasonSameCkpt, nil
	}
	var start, cEnd, rEnd int
	switch typ {
	case TypeTrajectory:
		p := c.promptEnd
		if p >= cn || r.promptEnd >= rn {
			return sp, reasonEmpty, nil
		}
		if p == 0 || p != r.promptEnd || !userOrTool(cm.roles[p-1]) {
			return sp, reasonPrompt, nil
		}
		if n, err := b.prefixLen(c, r, p); err != nil || n < p {
			return sp, reasonPrompt, err
		}
		start, cEnd, rEnd = p, cn, rn
	case TypeStep:
		if c.promptEnd == 0 || c.promptEnd != r.promptEnd {
			return sp, reasonPrompt, nil
		}
		if n, err := b.prefixLen(c, r, c.promptEnd); err != nil || n < c.promptEnd {
			return sp, reasonPrompt, err
		}
		i, err := b.prefixLen(c, r, cn)
		if err != nil {
			return sp, reasonNone, err
		}
		if i >= cn || i >= rn || cm.roles[i] != roleAssistant || rm.roles[i] != roleAssistant || !userOrTool(cm.roles[i-1]) {
			return sp, reasonOffAssistant, nil
		}
		onset := false
		for _, t := range r.onsets {
			onset = onset || int(t) == i
		}
		if !onset {
			return sp, reasonNotOnset, nil
		}
		start, cEnd, rEnd = i, cn, rn
		if b.opt.StepContinuation == ContinueTurn {
			cEnd, rEnd = i+1, i+1
		}
	}
	if b.opt.MaxMessages > 0 && (cEnd > b.opt.MaxMessages || rEnd > b.opt.MaxMessages) { // prompt + side
		return sp, reasonLength, nil
	}
	gap := c.reward - r.reward
	if b.opt.MinGap != nil && gap < *b.opt.MinGap {
		return sp, reasonGap, nil
	}
	if c.native && (cm.rawIn(0, cEnd) || rm.rawIn(start, rEnd)) {
		return sp, reasonRawArguments, nil
	}
	if b.opt.MaxChars > 0 {
		long, err := b.tooLong(c, r, start, cEnd, rEnd)
		if err != nil || long {
			return sp, reasonLength, err
		}
	}
	return span{start, cEnd, rEnd}, reasonNone, nil
}

// wouldFail is candidate's answer without its effect: the reason, or
// reasonNone where candidate would give a pair.
func (b *builder) wouldFail(c, r *item, typ string) (int8, error) {
	sp, why, err := b.check(c, r, typ)
	if err != nil || why != reasonNone {
		return why, err
	}
	if b.seen[b.dedupKey(c, r, sp)] {
		return reasonDedup, nil
	}
	return reasonNone, nil
}

// candidate builds the pair (c chosen, r rejected) of the type, or says why
// it is not a valid pair. Every check, the dedup key included, comes
// before rendering: only pairs that are emitted are rendered, and only
// they read their records.
func (b *builder) candidate(c, r *item, typ, split string) (*dataset.DPORow, int8, error) {
	sp, why, err := b.check(c, r, typ)
	if err != nil || why != reasonNone {
		return nil, why, err
	}
	key := b.dedupKey(c, r, sp)
	if b.seen[key] {
		return nil, reasonDedup, nil
	}
	b.seen[key] = true
	row, err := b.row(c, r, typ, split, sp.start, sp.cEnd, sp.rEnd)
	return row, reasonNone, err
}

// span is a candidate's divergence and the ends of its sides.
type span struct{ start, cEnd, rEnd int }

func (b *builder) dedupKey(c, r *item, sp span) dedupKey {
	return dedupKey{start: sp.start, prompt: c.m.prefix[sp.start], cho: c.m.completion(sp.start, sp.cEnd), rej: r.m.completion(sp.start, sp.rEnd)}
}

// tooLong reports whether prompt + chosen or prompt + rejected has more than
// MaxChars bytes.
func (b *builder) tooLong(c, r *item, start, cEnd, rEnd int) (bool, error) {
	var p, pc, pr int
	if c.native {
		cs, rs := c.sz, r.sz // computed by scan
		// size(dataset.RenderWith(c, messages[:start])), and of
		// dataset.RenderCompletion of each side's [start, end)
		p, pc, pr = cs.sizes[start], cs.keptSizes[start]-cs.keptSizes[cEnd], rs.keptSizes[start]-rs.keptSizes[rEnd]
	} else { // a text view renders a part of the conversation as a whole
		var err error
		if p, err = b.textSize(c, true, 0, start); err != nil {
			return false, err
		}
		if pc, err = b.textSize(c, false, start, cEnd); err != nil {
			return false, err
		}
		if pr, err = b.textSize(r, false, start, rEnd); err != nil {
			return false, err
		}
	}
	return p+pc > b.opt.MaxChars || p+pr > b.opt.MaxChars, nil
}

// row renders the pair (c, r) from their records.
func (b *builder) row(c, r *item, typ, split string, start, cEnd, rEnd int) (*dataset.DPORow, error) {
	crec, err := b.cache.get(c)
	if err != nil {
		return nil, err
	}
	rrec, err := b.cache.get(r)
	if err != nil {
		return nil, err
	}
	cm, rm := crec.Messages, rrec.Messages
	gap := c.reward - r.reward
	prompt := dataset.RenderWith(crec, cm[:start], b.opt.Render)
	ch := dataset.RenderCompletion(crec, cm[start:cEnd], b.opt.Render)
	rj := dataset.RenderCompletion(rrec, rm[start:rEnd], b.opt.Render)

	types, kinds, provs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, m := range rrec.CountedMatches() { // each drifting call once by type
		if m.Turn < start || m.Turn >= rEnd {
			continue
		}
		types[string(m.Drift)] = true
		if m.Kind != "" {
			kinds[string(m.Kind)] = true
		}
		for _, p := range m.Provisions {
			provs[p] = true
		}
	}
	id := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00%s", typ, crec.TrajID, rrec.TrajID, start, b.contTag(typ))))
	tools := dataset.Tools(crec)
	prompt, tools = dataset.FinishRow(b.opt.Render, prompt, tools, &ch, &rj)
	row := &dataset.DPORow{
		Prompt: prompt, Chosen: ch, Rejected: rj, Tools: tools,
		PairID: hex.EncodeToString(id[:8]), ScenarioID: crec.ScenarioID, Domain: crec.Domain, Split: split,
		PairType: typ, Framework: crec.Framework, ToolFormat: dataset.FormatOf(crec.Framework).String(), ChosenTrajID: crec.TrajID, RejectedTrajID: rrec.TrajID,
		ChosenCheckpoint: crec.Checkpoint, RejectedCheckpoint: rrec.Checkpoint, DivergenceStep: start,
		ChosenReward: c.reward, RejectedReward: r.reward, RewardGap: gap,
		DriftTypes: set(types), ViolationKinds: set(kinds), Provisions: set(provs),
		ChosenTrain: dataset.TrainMask(ch), RejectedTrain: dataset.TrainMask(rj),
		SchemaVersion: dataset.SchemaVersion,
	}
	row.PromptTokensEst = dataset.EstimatePromptTokens(prompt, tools)
	row.ChosenTokensEst, row.RejectedTokensEst = dataset.EstimateTokens(ch), dataset.EstimateTokens(rj)
	if b.opt.Margin {
		g := gap
		row.Margin = &g
	}
	return row, nil
}

// textSize is, for a text-protocol framework, size(dataset.RenderWith(...))
// of the item's messages [from, to) as a prompt, or size(dataset.
// RenderCompletion(...)) as a completion, remembered per part: an item
// meets many partners at the same few parts.
func (b *builder) textSize(it *item, prompt bool, from, to int) (int, error) {
	k := textPart{prompt, from, to}
	if it.sz != nil {
		if n, ok := it.sz.textSizes[k]; ok {
			return n, nil
		}
	}
	rec, err := b.cache.get(it)
	if err != nil {
		return 0, err
	}
	var n int
	if prompt {
		n = size(dataset.RenderWith(rec, rec.Messages[from:to], b.opt.Render))
	} else {
		n = size(dataset.RenderCompletion(rec, rec.Messages[from:to], b.opt.Render))
	}
	if it.sz == nil {
		it.sz = &sizes{}
	}
	if it.sz.textSizes == nil {
		it.sz.textSizes = map[textPart]int{}
	}
	it.sz.textSizes[k] = n
	return n, nil
}

// dedupKey identifies what a row of (c, r) holds, tool-call ids aside:
// the prompt c's messages [0, start), the continuations c's [start, cEnd)
// and r's [start, rEnd) (with model-turns completions, their assistant
// turns). Two candidates get the same key exactly when those three
// sequences are the same messages (by sameMessage's canonical form).
type dedupKey struct {
	start            int
	prompt, cho, rej [32]byte
}

// sizesOf computes a record's message sizes (sizes.sizes, keptSizes): the
// bytes of each message's exported JSON (native frameworks: a message
// renders on its own).
func (b *builder) sizesOf(ms []trajectory.Message) *sizes {
	m := &sizes{sizes: make([]int, len(ms)+1), keptSizes: make([]int, len(ms)+1)}
	for i := range ms {
		m.sizes[i+1] = m.sizes[i] + len(dataset.MessageJSONWith(ms[i], b.opt.Render))
	}
	for i := len(ms) - 1; i >= 0; i-- {
		m.keptSizes[i] = m.keptSizes[i+1]
		if b.keeps(&ms[i]) {
			m.keptSizes[i] += m.sizes[i+1] - m.sizes[i]
		}
	}
	return m
}
