package env_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/antidrift/antidrift/rollout/env"
)

func TestApproves(t *testing.T) {
	bound := []string{"payee_id", "amount"}
	args := map[string]any{"invoice": "INV-1", "payee_id": "PY-1", "amount": "10.00"}
	cases := []struct {
		name     string
		approval any
		want     bool
	}{
		{"names the call's values", map[string]any{"payee_id": "PY-1", "amount": "10.00"}, true},
		{"another payee", map[string]any{"payee_id": "PY-9", "amount": "10.00"}, false},
		{"another amount", map[string]any{"payee_id": "PY-1", "amount": "99.00"}, false},
		{"names only part of the binding", map[string]any{"payee_id": "PY-1"}, false},
		{"one of several approvals", []any{map[string]any{"payee_id": "PY-9", "amount": "10.00"}, map[string]any{"payee_id": "PY-1", "amount": "10.00"}}, true},
		{"none of several", []any{map[string]any{"payee_id": "PY-9", "amount": "10.00"}}, false},
		{"a yes/no flag names nothing", true, false},
		{"a bare string names nothing", "PY-1", false},
		{"absent", nil, false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, env.Approves(c.approval, bound, args), c.name)
	}
	assert.False(t, env.Approves(map[string]any{"payee_id": "PY-1", "amount": "10.00"}, bound, map[string]any{"payee_id": "PY-1"}), "a call without a bound argument")
}
