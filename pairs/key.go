package pairs

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// msgKey identifies a message as sameMessage and the dedup key see it:
// the SHA-256 of its canonical encoding (appendCanonical).
type msgKey struct {
	d [32]byte
	// exact: every parsed argument of the message is valid JSON, so that
	// two exact messages are sameMessage exactly when their digests are
	// equal (sameMessage compares unparseable arguments by their bytes,
	// the canonical encoding by their text).
	exact bool
}

// Domain bytes of the SHA-256 inputs: a message, a prompt chain link, a
// completion chain link; no input of one kind is an input of another.
const (
	domMessage = iota
	domPrompt
	domCompletion
)

// msgs is what an item's candidates read of its messages, computed once
// per item while the scenario is streamed, and shared by the items whose
// messages have the same keys (interned: a scenario's rollouts repeat the
// same episodes), so that pairing reads no record to compare two items.
type msgs struct {
	keys []msgKey
	// roles are the messages' roles (roleAssistant, …): what the
	// structural checks and the completion's kept messages read.
	roles []uint8
	// keep[i]: a completion keeps the i-th message (builder.keeps).
	keep []bool
	// prefix[i] digests the messages [0, i) (a chain: prefix[i+1] =
	// SHA-256(domPrompt, prefix[i], keys[i].d)), so that a prompt's part of
	// the dedup key costs one copy.
	prefix [][32]byte
	// rest[i] is the completion digest (see link) of the messages [i, len)
	// that a completion keeps.
	rest [][32]byte
	// raw lists the messages with a tool call whose arguments never parsed
	// as an object (dataset.RawArguments), ascending.
	raw []int
	// exact: every key is exact (msgKey.exact): two items' messages
	// compare by their keys alone.
	exact bool
}

// Message roles as msgs keeps them.
const (
	roleOther uint8 = iota
	roleAssistant
	roleUser
	roleTool
)

func roleOf(r string) uint8 {
	switch r {
	case trajectory.RoleAssistant:
		return roleAssistant
	case trajectory.RoleUser:
		return roleUser
	case trajectory.RoleTool:
		return roleTool
	}
	return roleOther
}

// sizes are an item's message sizes for MaxChars: sizes[i] is the number
// of bytes of the exported JSON (with the render options) of the messages
// [0, i), and keptSizes[i] that of the messages [i, len) a completion keeps;
// textSizes are the sizes of parts rendered through a text view
// (builder.textSize). They depend on tool-call ids and reasoning, which the
// keys leave out: one per item, not shared.
type sizes struct {
	sizes, keptSizes []int
	textSizes        map[textPart]int
}

type textPart struct {
	prompt   bool
	from, to int
}

// A completion's digest identifies the sequence of its messages' digests:
// none, zero; one, its digest; more, SHA-256(domCompletion, the first's
// digest, the rest's digest). Different sequences get different digests
// (short of a SHA-256 collision: a message digest and a link hash
// different inputs).
func link(dom byte, a, b *[32]byte) [32]byte {
	var in [65]byte
	in[0] = dom
	copy(in[1:33], a[:])
	copy(in[33:], b[:])
	return sha256.Sum256(in[:])
}

// keyer computes message keys: a scratch buffer and the canonical form of
// each distinct parsed-argument bytes of the scenario (records of one
// scenario repeat the same calls), cleared between scenarios.
type keyer struct {
	buf  []byte
	args map[string]canonArgs
}

type canonArgs struct {
	b  []byte
	ok bool // the bytes unmarshalled: b is their canonical form
}

// canonical returns the canonical form of parsed arguments as the dedup
// key has always compared them: the value re-marshalled by encoding/json
// (maps with sorted keys, numbers as float64), or ok = false when the
// bytes do not unmarshal.
func (k *keyer) canonical(parsed json.RawMessage) canonArgs {
	if c, ok := k.args[string(parsed)]; ok {
		return c
	}
	var c canonArgs
	var v any
	if json.Unmarshal(parsed, &v) == nil {
		c.b, _ = json.Marshal(v) // maps marshal with sorted keys: canonical
		c.ok = true
	}
	if k.args == nil {
		k.args = map[string]canonArgs{}
	}
	if len(k.args) >= maxArgs {
		k.reset()
	}
	k.args[string(parsed)] = c
	return c
}

// reset forgets the canonical forms; a scenario whose calls rarely repeat
// also forgets them every maxArgs distinct arguments, so that the cache
// stays small whatever the scenario's size (it only saves work).
func (k *keyer) reset() { clear(k.args) }

const maxArgs = 1 << 16

// appendCanonical appends a message as the dedup key sees it, like
// sameMessage, without tool-call ids: role, content, name, the number of
// calls, and each call's type, function name, whether its arguments
// parsed, and its arguments (canonical when they parsed as JSON, the text
// otherwise). Every field is length-prefixed: the encoding is injective.
func (k *keyer) appendCanonical(b []byte, m *trajectory.Message) ([]byte, bool) {
	exact := true
	b = appendString(b, m.Role)
	b = appendString(b, m.Content)
	b = appendString(b, m.Name)
	b = binary.AppendUvarint(b, uint64(len(m.ToolCalls)))
	for i := range m.ToolCalls {
		f := &m.ToolCalls[i].Function
		b = appendString(b, m.ToolCalls[i].Type)
		b = appendString(b, f.Name)
		if len(f.Parsed) == 0 {
			b = append(b, 0)
			b = appendString(b, f.Arguments)
			continue
		}
		b = append(b, 1)
		c := k.canonical(f.Parsed)
		if !c.ok {
			exact = false
			b = appendString(b, f.Arguments)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(c.b)))
		b = append(b, c.b...)
	}
	return b, exact
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// messages computes an item's message keys; keeps says which messages a
// completion keeps.
func (k *keyer) messages(ms []trajectory.Message, keeps func(*trajectory.Message) bool) *msgs {
	n := len(ms)
	out := &msgs{keys: make([]msgKey, n), roles: make([]uint8, n), keep: make([]bool, n), prefix: make([][32]byte, n+1), rest: make([][32]byte, n+1), exact: true}
	for i := range ms {
		var exact bool
		k.buf, exact = k.appendCanonical(append(k.buf[:0], domMessage), &ms[i])
		out.keys[i] = msgKey{d: sha256.Sum256(k.buf), exact: exact}
		out.roles[i] = roleOf(ms[i].Role)
		out.keep[i] = keeps(&ms[i])
		out.exact = out.exact && exact
		out.prefix[i+1] = link(domPrompt, &out.prefix[i], &out.keys[i].d)
		if dataset.RawArguments(ms[i : i+1]) {
			out.raw = append(out.raw, i)
		}
	}
	found := false // a message of [i+1, n) is kept
	for i := n - 1; i >= 0; i-- {
		out.rest[i] = out.rest[i+1]
		if out.keep[i] {
			if found {
				out.rest[i] = link(domCompletion, &out.keys[i].d, &out.rest[i+1])
			} else {
				out.rest[i], found = out.keys[i].d, true
			}
		}
	}
	return out
}

// completion is the digest of the kept messages [from, to) (see link).
func (m *msgs) completion(from, to int) [32]byte {
	if to == len(m.keys) {
		return m.rest[from]
	}
	var d [32]byte // the kept messages [i, to): none yet
	found := false
	for i := to - 1; i >= from; i-- {
		if !m.keep[i] {
			continue
		}
		if found {
			d = link(domCompletion, &m.keys[i].d, &d)
		} else {
			d, found = m.keys[i].d, true
		}
	}
	return d
}

// rawIn reports whether a message of [from, to) has raw arguments.
func (m *msgs) rawIn(from, to int) bool {
	for _, i := range m.raw {
		if i >= from && i < to {
			return true
		}
	}
	return false
}

// same reports sameMessage(&a[i], &b[i]) from the keys: digests differ
// exactly when the messages differ, unless one has arguments that never
// parsed as JSON, which sameMessage decides itself.
func same(x, y *msgs, a, b []trajectory.Message, i int) bool {
	kx, ky := &x.keys[i], &y.keys[i]
	if kx.exact && ky.exact {
		return kx.d == ky.d
	}
	return sameMessage(&a[i], &b[i])
}

// prefixLen is commonPrefix of the two items' messages [0, n) through the
// keys. Items whose keys are all exact compare by them alone; the others
// need their records (loaded through the cache: rare).
func (b *builder) prefixLen(x, y *item, n int) (int, error) {
	n = min(n, len(x.m.keys), len(y.m.keys))
	if x.m.exact && y.m.exact {
		kx, ky := x.m.keys[:n], y.m.keys[:n]
		for i := range kx {
			if kx[i].d != ky[i].d {
				return i, nil
			}
		}
		return n, nil
	}
	rx, err := b.cache.get(x)
	if err != nil {
		return 0, err
	}
	ry, err := b.cache.get(y)
	if err != nil {
		return 0, err
	}
	for i := 0; i < n; i++ {
		if !same(x.m, y.m, rx.Messages, ry.Messages, i) {
			return i, nil
		}
	}
	return n, nil
}
