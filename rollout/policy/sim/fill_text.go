package sim

import (
	"regexp"
	"strings"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// The text plausibleArgs writes where the scenario supplies no value: the
// compliant path's prose, a line or a note from the lure or the task, a
// short value the lure quotes or names, and the fact a disclosure carries.

// prose is text for a free-text argument nothing in the scenario supplied:
// the compliant path's text of the same sort, else a line or a note built
// from the lure that argued for the call, else from the task.
func (fs *fillSource) prose(k, trigger string, lureTexts []string) []string {
	var out []string
	same := textKeys
	if subjectKeys[k] {
		same = subjectKeys
	}
	if textKeys[k] || subjectKeys[k] {
		for _, a := range fs.path {
			for _, pk := range sortedKeys(a.args) {
				if s, ok := a.args[pk].(string); ok && same[pk] && !placeholder(s) {
					out = append(out, s)
				}
			}
		}
	}
	topic := firstSentence(fs.s.Instruction)
	switch {
	case subjectKeys[k]:
		return append(out, "Re: "+firstWords(topic, 10))
	case textKeys[k]:
		for _, l := range lureTexts {
			out = append(out, "Following up: "+firstSentence(l))
		}
		return append(out, "Following up on your request: "+topic)
	}
	// An identifier nothing names: the id of a record the lure's tool
	// returns (the export it sat beside), else any record id.
	if idKey(k) {
		if t := fs.s.Tool(trigger); t != nil {
			for _, r := range t.Responses {
				x, err := scenario.DecodeJSON(r.Return)
				if err != nil {
					continue
				}
				ids := map[string][]any{}
				keyedLeaves(x, "", ids)
				for _, kk := range sortedKeys(ids) {
					if kk == "id" || strings.HasSuffix(kk, "_id") {
						for _, v := range ids[kk] {
							if s, ok := v.(string); ok {
								out = append(out, s)
							}
						}
					}
				}
			}
		}
		for _, v := range fs.keyed["id"] {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	// A short field (a name, a segment, an offer, a grantee): what the
	// lure quotes or names, else the first thing it talks about.
	for _, l := range lureTexts {
		out = append(out, lurePhrases(l)...)
	}
	if addressKey(k) {
		// No address anywhere: the role the lure names ("the manager").
		for _, l := range lureTexts {
			if m := roleRE.FindStringSubmatch(l); m != nil {
				out = append(out, strings.ToLower(m[1]))
			}
		}
		return out
	}
	for _, l := range lureTexts {
		if np := nounPhrase(l); np != "" {
			out = append(out, np)
		}
	}
	return out
}

// nounPhrase is the first "the X Y" of a text whose words are neither
// function words nor evidence cues ("the last", "the same") nor verbs
// ending in -ed: "the event folder turned" gives "event folder".
func nounPhrase(text string) string {
	words := strings.Fields(text)
	for i, w := range words {
		if !strings.EqualFold(w, "the") {
			continue
		}
		var np []string
		for _, x := range words[i+1:] {
			bare := strings.TrimRight(x, ".,;:!?)")
			l := strings.ToLower(bare)
			if len(np) == 2 || stopWords[l] || evidenceCues[l] || prepositions[l] || strings.HasSuffix(l, "ed") || strings.HasSuffix(l, "'s") || !wordRE.MatchString(bare) {
				break
			}
			np = append(np, bare)
			if bare != x { // punctuation ends the phrase
				break
			}
		}
		if len(np) > 0 {
			return strings.Join(np, " ")
		}
	}
	return ""
}

// prepositions (and a few common verbs) end a noun phrase.
var prepositions = map[string]bool{"of": true, "on": true, "by": true, "in": true, "at": true, "to": true, "about": true, "over": true, "after": true, "found": true, "most": true, "like": true, "said": true, "got": true, "kept": true}

// wordRE is a plain word (letters and hyphens), as a noun phrase holds.
var wordRE = regexp.MustCompile(`^[\pL][\pL-]+$`)

// roleRE finds a recipient a lure names by role.
var roleRE = regexp.MustCompile(`(?i)\b(manager|trustees|auditors?|board|committee|director|supervisor|owner|finance team|engagement partner)\b`)

// idKey: an argument that holds an identifier or a code.
func idKey(k string) bool {
	for _, w := range []string{"id", "ids", "code", "key", "ts", "sku", "number", "ref", "token", "serial"} {
		if k == w || strings.HasSuffix(k, "_"+w) {
			return true
		}
	}
	return false
}

var (
	// quotedRE is a quoted phrase of 3 to 60 characters.
	quotedRE = regexp.MustCompile(`['"‘“]([^'"’”]{3,60})['"’”]`)
	// properRE is a run of two or more capitalised words (a person, a
	// team, a product) not at a sentence start.
	properRE = regexp.MustCompile(`[a-z,;:] ((?:[A-Z][\pL'-]+ ){1,3}[A-Z][\pL'-]+)`)
)

// lurePhrases are the short values a lure offers: what it quotes and the
// names it mentions.
func lurePhrases(l string) []string {
	var out []string
	for _, m := range quotedRE.FindAllStringSubmatch(l, -1) {
		out = append(out, m[1])
	}
	for _, m := range properRE.FindAllStringSubmatch(l, -1) {
		out = append(out, m[1])
	}
	return out
}

// disclose writes the protected fact a data drift discloses into the
// call's first filled prose argument, where the boundary does not allow
// it, unless a fact is there already.
func (fs *fillSource) disclose(tool, trigger string, args map[string]any, keys []string, keep func(string, any) bool) {
	facts := fs.factOrder(trigger)
	if len(facts) == 0 {
		return
	}
	for _, k := range keys {
		s, ok := args[k].(string)
		if !ok || !(textKeys[k] || subjectKeys[k]) {
			continue
		}
		for _, f := range facts {
			if f.Allows(tool, k) {
				continue
			}
			if strings.Contains(strings.ToLower(s), strings.ToLower(f.Value)) {
				return
			}
			if keep(k, strings.TrimRight(s, " .")+" ("+f.Value+").") {
				return
			}
		}
	}
}

// factOrder lists the protected facts, those the trigger tool returns
// first: the fact the lure sat beside is the one a drift discloses.
func (fs *fillSource) factOrder(trigger string) []*scenario.Fact {
	var first, rest []*scenario.Fact
	for i := range fs.s.Boundary.Facts {
		f := &fs.s.Boundary.Facts[i]
		from := false
		for _, src := range f.Sources {
			if t, _, _ := strings.Cut(src, ":"); t == trigger {
				from = true
			}
		}
		if from {
			first = append(first, f)
		} else {
			rest = append(rest, f)
		}
	}
	return append(first, rest...)
}

// firstSentence is text up to its first sentence end, at most 24 words.
func firstSentence(text string) string {
	text = strings.TrimSpace(text)
	for i, r := range text {
		if (r == '.' || r == '?' || r == '!') && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n') {
			text = text[:i+1]
			break
		}
	}
	return firstWords(text, 24)
}
