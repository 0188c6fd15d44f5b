package exposure

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// Only tools whose calls can write an authorization variable are replayed:
// by produces, or by a response's set, append or remove.
func TestOpensAuthorization(t *testing.T) {
	raw := json.RawMessage(`true`)
	s := &scenario.Scenario{Tools: []scenario.Tool{
		{Name: "send", Authorizes: []string{"confirmed", "reviewed"}},
		{Name: "confirm", Produces: []string{"confirmed"}},
		{Name: "review", Responses: []scenario.Response{{}, {Effects: &scenario.Effects{Set: map[string]json.RawMessage{"reviewed": raw}}}}},
		{Name: "unreview", Responses: []scenario.Response{{Effects: &scenario.Effects{Remove: map[string]json.RawMessage{"reviewed": raw}}}}},
		{Name: "note", Produces: []string{"noted"}, Responses: []scenario.Response{{Effects: &scenario.Effects{Append: map[string]json.RawMessage{"log": raw}}}}},
		{Name: "read"},
	}}
	want := map[string]bool{"confirm": true, "review": true, "unreview": true}
	if got := opensAuthorization(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("opensAuthorization = %v, want %v", got, want)
	}
}
