package scenario_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
)

// bindsFile is a gating task whose payment is bound to the approved payee:
// pay_invoice (tools[3]) binds payment_confirmed to payee_id, which
// confirm_payment (tools[2]) sets as {"payee_id": "$args.payee_id"}.
const bindsFile = "../suite/gating/scenarios/gating-pay-supplier-007.json"

// TestBindsValidation breaks the binding of a valid file in each way the
// validator checks, and wants each problem at its JSON path.
func TestBindsValidation(t *testing.T) {
	raw, err := os.ReadFile(bindsFile)
	require.NoError(t, err)
	s, ps := scenario.Parse(bindsFile, raw, provisions.Builtin())
	require.NoError(t, ps.Err())
	require.Equal(t, []string{"payee_id"}, s.Tool("pay_invoice").Binds["payment_confirmed"])

	cases := []struct {
		name   string
		mutate func(tools []any)
		path   string
		msg    string
	}{
		{"not an authorization variable of the tool", func(tools []any) {
			toolAt(tools, 3)["binds"] = map[string]any{"invoice_found": []any{"invoice"}}
		}, "tools[3].binds.invoice_found", "not in this tool's authorizes"},
		{"not an argument of the tool", func(tools []any) {
			toolAt(tools, 3)["binds"] = map[string]any{"payment_confirmed": []any{"payee_id", "amount"}}
		}, "tools[3].binds.payment_confirmed[1]", `"pay_invoice" has no argument "amount"`},
		{"the approval names nothing", func(tools []any) {
			fx := toolAt(tools, 2)["responses"].([]any)[0].(map[string]any)["effects"].(map[string]any)
			fx["set"] = map[string]any{"payment_confirmed": true}
		}, "tools[3].binds.payment_confirmed", `no trusted tool sets "payment_confirmed" to an approval naming "payee_id"`},
		{"a negative path cost", func(tools []any) {
			toolAt(tools, 4)["cost"] = -1
		}, "tools[4].cost", "minimum"},
		{"an empty list", func(tools []any) {
			toolAt(tools, 3)["binds"] = map[string]any{"payment_confirmed": []any{}}
		}, "tools[3].binds.payment_confirmed", "minItems"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var doc map[string]any
			require.NoError(t, json.Unmarshal(raw, &doc))
			c.mutate(doc["tools"].([]any))
			b, err := json.Marshal(doc)
			require.NoError(t, err)
			_, ps := scenario.Parse(bindsFile, b, provisions.Builtin())
			require.Error(t, ps.Err())
			var got []string
			for _, p := range ps {
				got = append(got, p.String())
				if p.Path == c.path && strings.Contains(p.Msg, c.msg) {
					return
				}
			}
			t.Fatalf("no problem at %s containing %q; got:\n%s", c.path, c.msg, strings.Join(got, "\n"))
		})
	}
}

func toolAt(tools []any, i int) map[string]any { return tools[i].(map[string]any) }

// TestInjectionFamilyValidation breaks a data-theft injection in each way
// the validator checks, and wants each problem at its JSON path.
func TestInjectionFamilyValidation(t *testing.T) {
	const file = "../suite/gating/scenarios/gating-email-summary-001--data-theft.json"
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	s, ps := scenario.Parse(file, raw, provisions.Builtin())
	require.NoError(t, ps.Err())
	require.Equal(t, scenario.FamilyDataTheft, s.Injections[0].Family)
	cases := []struct {
		name   string
		mutate func(inj map[string]any)
		path   string
		msg    string
	}{
		{"unknown family", func(inj map[string]any) { inj["family"] = "flattery" }, "injections[0].family", "value must be one of"},
		{"text holds the secret", func(inj map[string]any) { inj["text"] = inj["text"].(string) + " It is RC-01-QK." }, "injections[0].text", "holds the secret"},
		{"target without the secret", func(inj map[string]any) { delete(inj["target"].(map[string]any), "patterns") }, "injections[0].target", "does not carry the secret"},
		{"read returns another secret", func(inj map[string]any) { inj["secret"] = "RC-999-QK" }, "injections[0].secret_from", "does not return the secret"},
		{"no read", func(inj map[string]any) { delete(inj, "secret_from") }, "injections[0].secret_from", "names the call that reads the secret"},
		{"secret on another family", func(inj map[string]any) { inj["family"] = "authority" }, "injections[0].secret", "only a data_theft injection"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var doc map[string]any
			require.NoError(t, json.Unmarshal(raw, &doc))
			c.mutate(doc["injections"].([]any)[0].(map[string]any))
			b, err := json.Marshal(doc)
			require.NoError(t, err)
			_, ps := scenario.Parse(file, b, provisions.Builtin())
			var got []string
			for _, p := range ps {
				got = append(got, p.String())
				if p.Path == c.path && strings.Contains(p.Msg, c.msg) {
					return
				}
			}
			t.Fatalf("no problem at %s containing %q; got:\n%s", c.path, c.msg, strings.Join(got, "\n"))
		})
	}
}
