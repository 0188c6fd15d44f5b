package store

import (
	"reflect"
	"testing"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// recordTail must be trajectory.Record's fields after Steps, as they are
// (names, types, tags, order); appendRecord writes the ones up to Steps
// by hand, so a field added before Steps must be added there too.
func TestRecordTailMirrorsRecord(t *testing.T) {
	rt, tt := reflect.TypeOf(trajectory.Record{}), reflect.TypeOf(recordTail{})
	var head []string
	i := 0
	for ; i < rt.NumField(); i++ {
		head = append(head, rt.Field(i).Name)
		if rt.Field(i).Name == "Steps" {
			i++
			break
		}
	}
	want := []string{"TrajID", "Run", "Checkpoint", "Policy", "Framework", "ScenarioID", "Domain", "Rollout", "Seed",
		"Messages", "Tools", "ToolOrder", "Steps"}
	if !reflect.DeepEqual(head, want) {
		t.Fatalf("Record's fields up to Steps are %v; appendRecord writes %v", head, want)
	}
	if rt.NumField()-i != tt.NumField() {
		t.Fatalf("Record has %d fields after Steps, recordTail %d", rt.NumField()-i, tt.NumField())
	}
	for j := 0; j < tt.NumField(); j++ {
		a, b := rt.Field(i+j), tt.Field(j)
		if a.Name != b.Name || a.Type != b.Type || a.Tag != b.Tag {
			t.Errorf("Record.%s %v `%s` vs recordTail.%s %v `%s`", a.Name, a.Type, a.Tag, b.Name, b.Type, b.Tag)
		}
	}
}
