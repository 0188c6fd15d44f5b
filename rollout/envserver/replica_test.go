package envserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// fakeQueue stands in for the queue a replica records through.
type fakeQueue struct {
	mu      sync.Mutex
	recs    []*trajectory.Record
	next    map[string]int
	failRec error
	failCtr error
}

func (q *fakeQueue) Record(r *trajectory.Record) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failRec != nil {
		return q.failRec
	}
	q.recs = append(q.recs, r)
	return nil
}

func (q *fakeQueue) Next(id string) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failCtr != nil {
		return 0, q.failCtr
	}
	n := q.next[id]
	q.next[id]++
	return n, nil
}

func startReplica(t *testing.T, q *fakeQueue) (*Server, *httptest.Server) {
	t.Helper()
	ss, err := loadSuite()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewReplica(Config{Scenarios: ss[:3], Checkpoint: testCk, Seed: testSeed, Version: "test",
		Limits: agent.Limits{MaxSteps: 20}, Rewards: testScorer}, testRun, q, q)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close(); srv.Close() })
	return srv, ts
}

// TestReplicaRecordsThroughItsRecorder: a replica's episode takes its
// rollout index from the shared counter and hands its record, the one an
// in-process rollout of that index gives, to the recorder; a shutdown
// hands over the open episodes as abandoned.
func TestReplicaRecordsThroughItsRecorder(t *testing.T) {
	s := testScenario(t)
	actions := script(t, s)
	want := inProcess(t, s, actions)
	q := &fakeQueue{next: map[string]int{}}
	srv, ts := startReplica(t, q)
	var r Response
	post(t, ts.URL+"/reset", map[string]any{"scenario_id": s.ID, "client": "tester"}, &r)
	id := r.Observation.EpisodeID
	for i, a := range actions {
		r = Response{}
		if st := post(t, ts.URL+"/step", map[string]any{"episode_id": id, "action": a}, &r); st != http.StatusOK {
			t.Fatalf("step %d: %d", i, st)
		}
	}
	if !r.Done || len(q.recs) != 1 {
		t.Fatalf("done %v, %d records", r.Done, len(q.recs))
	}
	if g, w := comparable(t, q.recs[0]), comparable(t, want); g != w {
		t.Fatalf("record differs from the in-process rollout's:\n%s\nwant\n%s", g, w)
	}
	// The next episode of the scenario takes the counter's next index; the
	// shutdown hands it over as abandoned.
	post(t, ts.URL+"/reset", map[string]any{"scenario_id": s.ID}, &r)
	if want := trajectory.TrajID(testRun, testCk, engine.FrameworkNormal, s.ID, 1, engine.EpisodeSeed(testSeed, s.ID, 1)); r.Observation.TrajID != want {
		t.Fatalf("second episode %s, want rollout 1's %s", r.Observation.TrajID, want)
	}
	srv.Close()
	if len(q.recs) != 2 || q.recs[1].Status != trajectory.StatusInfraError || !strings.Contains(q.recs[1].Error, "the server shut down") {
		t.Fatalf("after the shutdown: %d records", len(q.recs))
	}
}

// TestReplicaQueueFailures: a counter that fails refuses the reset, and a
// record the queue did not take is an error to the client, never a
// silent loss.
func TestReplicaQueueFailures(t *testing.T) {
	s := testScenario(t)
	q := &fakeQueue{next: map[string]int{}, failCtr: errors.New("queue unreachable")}
	_, ts := startReplica(t, q)
	var e errorBody
	if st := post(t, ts.URL+"/reset", map[string]any{"scenario_id": s.ID}, &e); st != http.StatusInternalServerError || !strings.Contains(e.Detail, "rollout index of "+s.ID+": queue unreachable") {
		t.Fatalf("reset: %d %+v", st, e)
	}
	q.mu.Lock()
	q.failCtr, q.failRec = nil, errors.New("publishing the record: timeout")
	q.mu.Unlock()
	var r Response
	if st := post(t, ts.URL+"/reset", map[string]any{"scenario_id": s.ID}, &r); st != http.StatusOK {
		t.Fatalf("reset: %d", st)
	}
	answer := "done"
	e = errorBody{}
	if st := post(t, ts.URL+"/step", map[string]any{"episode_id": r.Observation.EpisodeID, "action": Action{Type: TypeFinalAnswer, Content: &answer}}, &e); st != http.StatusInternalServerError || !strings.Contains(e.Detail, "publishing the record: timeout") {
		t.Fatalf("final step: %d %+v", st, e)
	}
}
