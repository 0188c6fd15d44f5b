package queue

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// TestForgedAndMismatchedResultsAreNotWritten: before any worker runs,
// the bus carries a result without the run key under the first episode's
// trajectory id (version 9.9.9-forged), signed results that do not match
// their work item (another scenario; another toolkit version) or are not a
// valid record, and a "fatal" event without the run key. None is written,
// none stops the run, each is logged and counted, and every genuine result
// lands: the folder equals a local run's.
func TestForgedAndMismatchedResultsAreNotWritten(t *testing.T) {
	sp := spec{Policy: "sim:base", Rollouts: 1, Seed: 7, Conc: 4}
	want := sp.local(t)
	ts := startTestServer(t)
	nc, js := connect(t, ts.url())
	ss := testSuite(t)
	dir := filepath.Join(t.TempDir(), "run")
	cfg := sp.config(t, ss)
	var log syncBuf
	c := &Coordinator{NC: nc, JS: js, Config: cfg, Folder: sp.open(t, dir, ss), AckWait: 2 * time.Second, Log: &log}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type result struct {
		sum engine.Summary
		err error
	}
	done := make(chan result, 1)
	go func() { sum, err := c.Run(ctx); done <- result{sum, err} }()

	// The configuration, as a worker reads it.
	var rc RunConfig
	waitFor(t, 20*time.Second, "the run configuration", func() bool {
		obs, err := js.ObjectStore(ctx, configBucket)
		if err != nil {
			return false
		}
		b, err := obs.GetBytes(ctx, RunID("qtest"))
		return err == nil && json.Unmarshal(b, &rc) == nil
	})
	time.Sleep(300 * time.Millisecond) // the coordinator subscribes to events after publishing it
	plan := engine.Plan(cfg, "qtest")
	first, second := plan[0], plan[1]
	genuine := func(p engine.Planned) *trajectory.Record {
		return &trajectory.Record{TrajID: p.TrajID, Run: "qtest", Checkpoint: cfg.Checkpoint, Policy: cfg.PolicyName,
			Framework: cfg.Framework, ScenarioID: p.Scenario.ID, Domain: p.Scenario.Domain, Rollout: p.Rollout, Seed: p.Seed,
			Status: trajectory.StatusCompleted, Success: true, Version: cfg.Version}
	}
	publish := func(rec *trajectory.Record, key, msgID string) {
		t.Helper()
		m, err := encodeRecord(resultsSubject(rc.RunID), rec, 0)
		if err != nil {
			t.Fatal(err)
		}
		m.Header.Set(hdrScenarioHash, (&runner{}).scenarioHash(first.Scenario))
		if rec.ScenarioID == second.Scenario.ID {
			m.Header.Set(hdrScenarioHash, (&runner{}).scenarioHash(second.Scenario))
		}
		if key != "" {
			m.Header.Set(hdrAuth, resultAuth(key, rc.RunID, m))
		}
		if _, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(msgID)); err != nil {
			t.Fatal(err)
		}
	}
	// 1. No run key, under the genuine result's natural id.
	forged := genuine(first)
	forged.Version = "9.9.9-forged"
	publish(forged, "", first.TrajID)
	// 1b. A key guessed wrong, under the id a wrong key gives.
	publish(genuine(first), "not-the-key", resultMsgID("not-the-key", first.TrajID, ""))
	// 2. Signed, but not what the work item asked for.
	other := genuine(first)
	other.ScenarioID, other.Domain = second.Scenario.ID, second.Scenario.Domain
	publish(other, rc.RunKey, first.TrajID+"#other")
	version := genuine(second)
	version.Version = "9.9.9-forged"
	publish(version, rc.RunKey, second.TrajID+"#version")
	// 3. Signed and matching, but not a valid record.
	invalid := genuine(first)
	invalid.Status = "finished"
	publish(invalid, rc.RunKey, first.TrajID+"#invalid")
	// 4. A fatal event without the run key.
	ev, _ := json.Marshal(event{Worker: "mallory", Kind: "fatal", Message: "stop everything"})
	if err := nc.Publish(eventsSubject(rc.RunID), ev); err != nil {
		t.Fatal(err)
	}
	ev, _ = json.Marshal(event{Worker: "mallory", Kind: "fatal", Message: "stop everything", Auth: sign("guess", []byte("x"))})
	if err := nc.Publish(eventsSubject(rc.RunID), ev); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	time.Sleep(500 * time.Millisecond)

	startWorkers(t, ts.url(), 2, 4, nil)
	r := <-done
	if r.err != nil {
		t.Fatalf("the run stopped: %v\n%s", r.err, log.String())
	}
	sameRecords(t, folderRecords(t, dir, len(want)), want)
	if r.sum.Rejected != 3 || r.sum.Forged != 4 {
		t.Errorf("rejected %d, forged %d; want 3 and 4\n%s", r.sum.Rejected, r.sum.Forged, log.String())
	}
	for _, s := range []string{"without the run key", "scenario_id is", `version is "9.9.9-forged"`, "not a valid record", `ignored a "fatal" event`} {
		if !strings.Contains(log.String(), s) {
			t.Errorf("the log does not say %q:\n%s", s, log.String())
		}
	}
}
