package store

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// scanRecord decodes what scoring reads of a record line and checks the
// rest without keeping it: identity, labels, status, drift matches, the
// stored exposure and timings are decoded; messages keep their role and
// the number of their tool calls, steps their turn and calls (what
// CheckRecord reads); text, tools, arguments and visible lists are checked
// to have the kinds a Record gives them (scanwalk.go), and dropped.
type scanRecord struct {
	trajectory.Record
	Messages  scanMessages    `json:"messages"`
	Tools     scanAnyArray    `json:"tools"`
	ToolOrder scanStringArray `json:"tool_order,omitempty"`
	Steps     scanSteps       `json:"steps"`
	Plan      skipString      `json:"plan,omitempty"`
	Judge     scanJudgement   `json:"judge"`
}

type scanJudgement struct {
	Kind   skipString `json:"kind"`
	Score  float64    `json:"score"`
	Reason skipString `json:"reason"`
}

// knownStrings are the values scoring compares (roles, call outcomes),
// read without allocating.
var knownStrings = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{
		trajectory.RoleSystem, trajectory.RoleUser, trajectory.RoleAssistant, trajectory.RoleTool,
		"matched", "default", "invalid_args", "unknown_tool", "not_visible", "unparsed",
	} {
		m[s] = s
	}
	return m
}()

// DecodeRecordScan decodes a record line for scoring (score, pareto):
// identity, status, labels, drift matches, timings and the stored
// exposure; messages, tools and steps are left nil. A line is accepted
// exactly when DecodeRecord accepts it, with DecodeRecord's error when
// not: what is not kept is still checked (types, roles, steps against
// their turns), by CheckRecord's own rules.
func DecodeRecordScan(b []byte, r *trajectory.Record) error {
	var sr scanRecord
	err := errSlowPath
	if !needsStd(b) {
		err = decodeScanFast(b, &sr, nil)
	}
	if err != nil {
		sr = scanRecord{}
		err = decodeScan(b, &sr)
	}
	if err != nil {
		// The reference decides, and words the error; a record it accepts
		// (in a layout the scan leaves to it) is handed out as scanned.
		if err := DecodeRecord(b, r); err != nil {
			return err
		}
		r.Messages, r.Tools, r.ToolOrder, r.Steps, r.Plan = nil, nil, nil, nil, ""
		r.Judge = trajectory.Judgement{}
		return nil
	}
	if err := checkLine(b); err != nil {
		return err
	}
	*r = sr.Record
	r.Messages, r.Tools, r.ToolOrder, r.Steps, r.Plan = nil, nil, nil, nil, ""
	r.Judge = trajectory.Judgement{}
	return checkRecord(r, scanShape{&sr})
}

// decodeForScore is Scan's decoder: DecodeRecordScan, and for a record
// without a current exposure DecodeRecordLean again (its steps and parsed
// arguments, for a replay).
func decodeForScore(b []byte, r *trajectory.Record) error {
	if err := DecodeRecordScan(b, r); err != nil || r.Exposure.Current() {
		return err
	}
	return DecodeRecordLean(b, r)
}

// decodeScanFast reads a line in one pass: the messages, steps, tools and
// tool order are walked strictly (scanwalk.go); every other member is
// copied, as it stands, into a small object that the record decoder reads
// (and checks) into sr. Any error, or a layout it leaves to the reference
// (a key that differs from one of those four only in case, or is not
// ASCII), sends the line to decodeScan.
//
// With keep set, the walk also tells keep what DecodeRecordPrompt keeps.
func decodeScanFast(b []byte, sr *scanRecord, keep *promptKeep) error {
	w := &walker{b: b, keep: keep}
	if w.peek() != '{' {
		return errScanKind
	}
	w.i++
	bp := smallObjects.Get().(*[]byte)
	defer smallObjects.Put(bp)
	buf := append((*bp)[:0], '{')
	var msgs scanMessages
	var steps scanSteps
	var seen walkedKeys
	if w.peek() == '}' {
		w.i++
	} else {
		for {
			if w.peek() != '"' {
				return errScanKind
			}
			ks := w.i
			key, ok := w.str()
			if !ok {
				return errScanKind
			}
			kraw := b[ks:w.i]
			if w.peek() != ':' {
				return errScanKind
			}
			w.i++
			w.peek()
			var err error
			switch string(key) {
			case "messages", "steps", "tools", "tool_order":
				// Given twice, decoding merges the second array into the
				// first's elements: the reference's to do.
				if !seen.add(string(key)) {
					return errScanLayout
				}
			}
			switch string(key) {
			case "messages":
				err = msgs.walk(w)
			case "steps":
				err = steps.walk(w)
			case "tools":
				vs := w.i
				err = walkedTools.walk(w, scanAnyArray{}.walk)
				if keep != nil {
					keep.tools = b[vs:w.i]
				}
			case "tool_order":
				err = scanStringArray{}.walk(w)
			default:
				if !plainASCII(key) || foldsToWalked(key) {
					return errScanLayout
				}
				vs := w.i
				w.skipLoose()
				if len(buf) > 1 {
					buf = append(buf, ',')
				}
				buf = append(append(append(buf, kraw...), ':'), b[vs:w.i]...)
			}
			if err != nil {
				return err
			}
			switch w.peek() {
			case ',':
				w.i++
				continue
			case '}':
				w.i++
			default:
				return errScanKind
			}
			break
		}
	}
	if w.peek() != 0 {
		return errScanKind
	}
	buf = append(buf, '}')
	*bp = buf
	if err := recordJSON.Unmarshal(buf, sr); err != nil {
		return err
	}
	sr.Messages, sr.Steps = msgs, steps
	return nil
}

// walkedMembers are the members decodeScanFast walks.
var walkedMembers = []string{"messages", "steps", "tools", "tool_order"}

// walkedKeys notes which of the walked members a line has given.
type walkedKeys uint8

// add notes key and reports whether it is new.
func (k *walkedKeys) add(key string) bool {
	bit := walkedKeys(1) << slices.Index(walkedMembers, key)
	if *k&bit != 0 {
		return false
	}
	*k |= bit
	return true
}

// smallObjects recycles decodeScanFast's small objects.
var smallObjects = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// foldsToWalked: a key decoding would take for one of the members
// decodeScanFast walks (it matches names without regard to case).
func foldsToWalked(key []byte) bool {
	for _, k := range walkedMembers {
		if strings.EqualFold(string(key), k) {
			return true
		}
	}
	return false
}

func decodeScan(b []byte, sr *scanRecord) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return errNotObject
	}
	if walkedTwice(b) {
		return errScanLayout
	}
	return recordJSON.Unmarshal(b, sr)
}

// walkedTwice reports whether a line gives a member the scanning walks
// read twice, as decoding matches keys (in any case, escaped or not): the
// walks would keep only the second, where decoding merges it into the
// first.
func walkedTwice(b []byte) bool {
	w := &walker{b: b}
	var seen walkedKeys
	twice := false
	_ = w.object(func(key []byte) error { // a line that is not JSON fails its decoding anyway
		k := string(key)
		if bytes.IndexByte(key, '\\') >= 0 {
			var s string
			if json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &s) == nil {
				k = s
			}
		}
		for _, name := range walkedMembers {
			if strings.EqualFold(k, name) && !seen.add(name) {
				twice = true
			}
		}
		w.skipLoose()
		return nil
	})
	return twice
}

// scanShape is a scanned record's messages and steps as CheckRecord reads
// them.
type scanShape struct{ r *scanRecord }

func (s scanShape) messages() int           { return len(s.r.Messages) }
func (s scanShape) role(i int) string       { return s.r.Messages[i].role }
func (s scanShape) toolCalls(i int) int     { return s.r.Messages[i].calls }
func (s scanShape) steps() int              { return len(s.r.Steps) }
func (s scanShape) stepTurn(i int) int      { return s.r.Steps[i].turn }
func (s scanShape) stepCalls(i int) int     { return s.r.Steps[i].calls }
func (s scanShape) stepUnparsed(i int) bool { return s.r.Steps[i].unparsed }
