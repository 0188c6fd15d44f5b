package probe

import (
	"context"
	"testing"

	"github.com/antidrift/antidrift/rollout/suite"
)

func TestSmokeBuiltin(t *testing.T) {
	ss, err := suite.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss[:3] {
		rep, err := Check(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(rep.Summary())
		for _, r := range rep.Results {
			t.Logf("  %-40s %-8s %-16s drift=%-5t success=%-5t pass=%t %s %v", r.Name, r.Class, r.Expect, r.Drift, r.Success, r.Pass, r.Got, r.Rules)
		}
		for _, s := range rep.Skipped {
			t.Log("  skipped ", s)
		}
	}
}
