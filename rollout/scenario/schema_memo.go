package scenario

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validMemoLimit bounds each schema's memo of validation outcomes: past it,
// new argument values are validated without being remembered.
const validMemoLimit = 4096

// validMemo remembers the outcome of validating argument values against
// one compiled schema. Validation is a pure function of the schema and the
// decoded value, and an episode validates each call several times (the
// environment, the drift detector, the judge's replay), as do the rollouts
// of one scenario that make the same calls; the key is an exact, typed
// encoding of the value (json.Number by its text), so only identical values
// share an outcome.
type validMemo struct {
	mu sync.RWMutex
	m  map[string]error // nil error: valid
}

var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// validate is s.Validate(args) through the memo.
func (vm *validMemo) validate(s *jsonschema.Schema, args map[string]any) error {
	bp := keyBufs.Get().(*[]byte)
	defer keyBufs.Put(bp)
	key, ok := appendValueKey((*bp)[:0], args)
	*bp = key[:0]
	if !ok {
		return validateArgsUncached(s, args)
	}
	vm.mu.RLock()
	err, hit := vm.m[string(key)]
	vm.mu.RUnlock()
	if hit {
		return err
	}
	err = validateArgsUncached(s, args)
	vm.mu.Lock()
	if vm.m == nil {
		vm.m = map[string]error{}
	}
	if len(vm.m) < validMemoLimit {
		vm.m[string(key)] = err
	}
	vm.mu.Unlock()
	return err
}

// appendValueKey appends an unambiguous encoding of a decoded JSON value
// (the types DecodeJSON produces, plus float64); ok is false for any other
// type, which is then not memoised.
func appendValueKey(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, 'n'), true
	case bool:
		if x {
			return append(b, 't'), true
		}
		return append(b, 'f'), true
	case string:
		b = append(b, 's')
		b = strconv.AppendInt(b, int64(len(x)), 10)
		return append(append(b, ':'), x...), true
	case json.Number:
		b = append(b, 'N')
		b = strconv.AppendInt(b, int64(len(x)), 10)
		return append(append(b, ':'), x...), true
	case float64:
		b = append(b, 'F')
		b = strconv.AppendFloat(b, x, 'g', -1, 64)
		return append(b, ';'), true
	case []any:
		b = append(b, '[')
		for _, e := range x {
			var ok bool
			if b, ok = appendValueKey(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		var arr [16]string
		keys := arr[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for _, k := range keys {
			b = strconv.AppendInt(b, int64(len(k)), 10)
			b = append(append(b, ':'), k...)
			var ok bool
			if b, ok = appendValueKey(b, x[k]); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}
