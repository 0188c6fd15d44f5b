package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/envserver"
	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/nats-io/nats.go/jetstream"
)

// envScenarios are the served scenarios of these tests: the first three
// files of the built-in suite, whatever their domain (what the queue does
// does not depend on them). Parsed alone, not with the whole suite: the
// subprocess writers load them too.
func envScenarios(t testing.TB) []*scenario.Scenario {
	t.Helper()
	ss, err := loadEnvScenarios()
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

var loadEnvScenarios = sync.OnceValues(func() ([]*scenario.Scenario, error) {
	var ss []*scenario.Scenario
	err := fs.WalkDir(suite.FS(), "scenarios", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") || len(ss) == 3 {
			return err
		}
		data, err := fs.ReadFile(suite.FS(), path)
		if err != nil {
			return err
		}
		s, ps := scenario.Parse(suite.Name+":"+path, data, provisions.Builtin())
		if err := ps.Err(); err != nil {
			return err
		}
		ss = append(ss, s)
		return nil
	})
	return ss, err
})

func envManifest(ss []*scenario.Scenario) store.Manifest {
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	return store.Manifest{Version: testVersion, Run: "envq-test", Created: "2026-01-01T00:00:00Z",
		Plan: store.Plan{ScenarioSource: "builtin", ScenarioHash: scenario.Hash(ss), ScenarioIDs: ids, Policy: "env-serve",
			Checkpoint: "ck", Framework: engine.FrameworkNormal, Seed: 7, Shard: "0/1", MaxSteps: 20,
			ToolOrder: engine.PlanToolOrder(agent.ToolOrderSeeded)},
		Settings: store.Settings{Rewards: "test rewards"}}
}

func envConfig(ss []*scenario.Scenario) envserver.Config {
	return envserver.Config{Scenarios: ss, Checkpoint: "ck", Seed: 7, Version: testVersion, Limits: agent.Limits{MaxSteps: 20},
		// Rewards are the observation's, never the record's: any scorer.
		Rewards: func(*trajectory.Record) (envserver.Score, error) {
			return envserver.Score{Components: map[string]float64{"reward/success": 0}}, nil
		}, RewardsSpec: "test rewards"}
}

// envScript is a scripted client of a scenario: its compliant path, then a
// final answer.
func envScript(t testing.TB, s *scenario.Scenario) []envserver.Action {
	t.Helper()
	var out []envserver.Action
	for _, rc := range s.RequiredCalls {
		full, err := s.CompleteArgs(rc.Tool, rc.Args, rc.Patterns)
		if err != nil {
			t.Fatalf("%s: %s: %v", s.ID, rc.Tool, err)
		}
		b, _ := json.Marshal(full)
		out = append(out, envserver.Action{ToolName: rc.Tool, Arguments: b})
	}
	answer := "Done as asked."
	return append(out, envserver.Action{Type: envserver.TypeFinalAnswer, Content: &answer})
}

func postJSON(t testing.TB, url string, body, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Error(err)
		return
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("%s: status %d: %s", url, resp.StatusCode, raw)
		return
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Errorf("%s: %v", url, err)
	}
}

// drive plays a scenario's script through POST /reset and /step; stop > 0
// leaves the episode after that many steps (a client that disappears).
func drive(t testing.TB, base string, s *scenario.Scenario, stop int) envserver.Response {
	t.Helper()
	var r envserver.Response
	postJSON(t, base+"/reset", map[string]any{"scenario_id": s.ID, "client": "tester"}, &r)
	if r.Observation == nil {
		return r
	}
	id := r.Observation.EpisodeID
	for i, a := range envScript(t, s) {
		if stop > 0 && i == stop {
			break
		}
		r = envserver.Response{}
		postJSON(t, base+"/step", map[string]any{"episode_id": id, "action": a}, &r)
	}
	return r
}

// replica is one `env serve --queue` replica in-process.
type replica struct {
	rep *EnvReplica
	srv *envserver.Server
	hs  *httptest.Server
}

func startReplica(t testing.TB, url string, m store.Manifest, ss []*scenario.Scenario) *replica {
	t.Helper()
	return startReplicaWith(t, url, m, ss, nil)
}

func startReplicaWith(t testing.TB, url string, m store.Manifest, ss []*scenario.Scenario, mod func(*envserver.Config)) *replica {
	t.Helper()
	nc, js := connect(t, url)
	m.Created = time.Now().UTC().Format(time.RFC3339) // each replica plans at its own time: only the plan must agree
	rep := &EnvReplica{NC: nc, JS: js, Manifest: m, Scenarios: ss}
	if err := rep.Attach(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	cfg := envConfig(ss)
	if mod != nil {
		mod(&cfg)
	}
	srv, err := envserver.NewReplica(cfg, m.Run, rep, rep)
	if err != nil {
		t.Fatal(err)
	}
	x := &replica{rep: rep, srv: srv, hs: httptest.NewServer(srv.Handler())}
	t.Cleanup(x.stop)
	return x
}

func (x *replica) stop() {
	if x.hs == nil {
		return
	}
	x.hs.CloseClientConnections()
	x.hs.Close()
	x.srv.Close()
	x.hs = nil
}

// collector is an EnvCollector running until stopped.
type collector struct {
	c       *EnvCollector
	cancel  context.CancelFunc
	done    chan struct{}
	sum     EnvSummary
	err     error
	records atomic.Int64
}

func startCollector(t testing.TB, url, dir string, m store.Manifest, ss []*scenario.Scenario) *collector {
	t.Helper()
	run, err := store.Open(dir, m, false)
	if err != nil {
		t.Fatal(err)
	}
	nc, js := connect(t, url)
	x := &collector{done: make(chan struct{})}
	x.c = &EnvCollector{NC: nc, JS: js, Folder: run, Scenarios: ss, Log: testLog{t},
		OnRecord: func(*trajectory.Record) { x.records.Add(1) }}
	ctx, cancel := context.WithCancel(context.Background())
	x.cancel = cancel
	go func() {
		defer close(x.done)
		x.sum, x.err = x.c.Run(ctx)
		run.Close()
	}()
	t.Cleanup(x.stop)
	return x
}

func (x *collector) stop() {
	x.cancel()
	<-x.done
}

// waitEnv polls cond (effects of goroutines and of the NATS server).
func waitEnv(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// drained reports whether the run's results stream holds nothing the
// collector has not acked.
func drained(t testing.TB, js jetstream.JetStream, run string) bool {
	ctx := context.Background()
	st, err := js.Stream(ctx, resultsStream(RunID(run)))
	if err != nil {
		return false
	}
	c, err := st.Consumer(ctx, collectConsumer)
	if err != nil {
		return false
	}
	ci, err := c.Info(ctx)
	return err == nil && ci.NumPending == 0 && ci.NumAckPending == 0
}

// envRecords reads a folder's trajectories (timings blanked), checking
// that none is there twice.
func envRecords(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	it := store.Records(dir)
	for it.Next() {
		r := *it.At()
		if _, dup := out[r.TrajID]; dup {
			t.Fatalf("%s: record %s twice", dir, r.TrajID)
		}
		r.Timings = trajectory.Timings{}
		b, _ := json.Marshal(r)
		out[r.TrajID] = string(b)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEnvReplicasShareOneFolder: two replicas behind the queue, each serving
// every scenario once at the same time, fill one folder through the
// collector with exactly the records one server gives for the same episodes
// (same trajectory ids, same content apart from timings).
func TestEnvReplicasShareOneFolder(t *testing.T) {
	ss := envScenarios(t)
	m := envManifest(ss)

	// One server, the same episodes: the reference.
	refDir := filepath.Join(t.TempDir(), "single")
	run, err := store.Open(refDir, m, false)
	if err != nil {
		t.Fatal(err)
	}
	single, err := envserver.New(envConfig(ss), run)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(single.Handler())
	for range 2 {
		for _, s := range ss {
			drive(t, hs.URL, s, 0)
		}
	}
	hs.Close()
	single.Close()
	run.Close()
	want := envRecords(t, refDir)
	if len(want) != 2*len(ss) {
		t.Fatalf("the single server wrote %d records", len(want))
	}

	ts := startTestServer(t)
	dir := filepath.Join(t.TempDir(), "served")
	col := startCollector(t, ts.url(), dir, m, ss)
	a, b := startReplica(t, ts.url(), m, ss), startReplica(t, ts.url(), m, ss)
	var wg sync.WaitGroup
	for _, x := range []*replica{a, b} {
		for _, s := range ss {
			wg.Add(1)
			go func() { defer wg.Done(); drive(t, x.hs.URL, s, 0) }()
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if got := a.rep.Published() + b.rep.Published(); got != int64(2*len(ss)) {
		t.Fatalf("replicas published %d records", got)
	}
	waitEnv(t, "the collector to write every episode", func() bool { return col.records.Load() == int64(2*len(ss)) })
	col.stop()
	if col.err != nil {
		t.Fatal(col.err)
	}
	if col.sum.Written != 2*len(ss) || col.sum.Duplicates+col.sum.Rejected+col.sum.Forged != 0 {
		t.Fatalf("summary %+v", col.sum)
	}
	sameRecords(t, envRecords(t, dir), want)
}

// TestEnvCollectorDedupRestartResume: a record published twice is written
// once; a result that is not a record of the run is refused; records
// published while the writer is down land when it restarts on the folder;
// a client that left is recorded in errors/; and a writer restarted after
// the queue lost its counters resumes them from the folder.
func TestEnvCollectorDedupRestartResume(t *testing.T) {
	ss := envScenarios(t)
	m := envManifest(ss)
	ts := startTestServer(t)
	_, js := connect(t, ts.url())
	dir := filepath.Join(t.TempDir(), "served")

	col := startCollector(t, ts.url(), dir, m, ss)
	x := startReplica(t, ts.url(), m, ss)
	end := drive(t, x.hs.URL, ss[0], 0)
	if !end.Done {
		t.Fatalf("episode not done: %+v", end)
	}
	waitEnv(t, "the first record", func() bool { return col.records.Load() == 1 })
	rec := envRecordsList(t, dir)[0]

	// The same record again: a retried publication (same message id, dropped
	// by the server), one past the duplicate window (another id: dropped by
	// the collector), and one whose identity was altered (refused).
	if err := x.rep.Record(rec); err != nil {
		t.Fatal(err)
	}
	if err := x.rep.publish(rec, "#late"); err != nil {
		t.Fatal(err)
	}
	bad := *rec
	bad.Rollout = 99 // its trajectory id no longer says so
	if err := x.rep.publish(&bad, "#bad"); err != nil {
		t.Fatal(err)
	}
	waitEnv(t, "the stream to drain", func() bool { return drained(t, js, m.Run) })
	col.stop()
	if col.err != nil || col.sum.Written != 1 || col.sum.Duplicates != 1 || col.sum.Rejected != 1 {
		t.Fatalf("summary %+v, %v", col.sum, col.err)
	}

	// The writer is down: episodes go on, and a client leaves mid-episode
	// (its session ends, as abandoned, when the replica shuts down).
	drive(t, x.hs.URL, ss[1], 0)
	drive(t, x.hs.URL, ss[0], 0)
	drive(t, x.hs.URL, ss[2], 1)
	x.stop()
	col = startCollector(t, ts.url(), dir, m, ss)
	waitEnv(t, "the records published while the writer was down", func() bool { return col.records.Load() == 3 })
	waitEnv(t, "the stream to drain", func() bool { return drained(t, js, m.Run) })
	col.stop()
	if col.err != nil || col.sum.Written != 2 || col.sum.Errors != 1 {
		t.Fatalf("summary %+v, %v", col.sum, col.err)
	}
	got := map[string][]int{}
	for _, r := range envRecordsList(t, dir) {
		got[r.ScenarioID] = append(got[r.ScenarioID], r.Rollout)
	}
	for _, v := range got {
		sort.Ints(v)
	}
	if fmt.Sprint(got) != fmt.Sprint(map[string][]int{ss[0].ID: {0, 1}, ss[1].ID: {0}}) {
		t.Fatalf("rollouts in the folder: %v", got)
	}
	next, infra, err := folderState(dir)
	if err != nil || len(infra) != 1 || next[ss[2].ID] != 1 {
		t.Fatalf("errors/: %v %v %v", next, infra, err)
	}

	// The queue lost its counters: the restarted writer raises them to what
	// the folder holds, so that no episode reuses an identity.
	if err := js.DeleteKeyValue(context.Background(), counterBucket); err != nil {
		t.Fatal(err)
	}
	col = startCollector(t, ts.url(), dir, m, ss)
	waitEnv(t, "the writer to raise the counters", func() bool {
		kv, err := js.KeyValue(context.Background(), counterBucket)
		if err != nil {
			return false
		}
		e, err := kv.Get(context.Background(), counterKey(RunID(m.Run), ss[0].ID))
		return err == nil && string(e.Value()) == "2"
	})
	x = startReplica(t, ts.url(), m, ss)
	for _, s := range ss {
		drive(t, x.hs.URL, s, 0)
	}
	waitEnv(t, "the records after the counters were lost", func() bool { return col.records.Load() == int64(len(ss)) })
	col.stop()
	if col.err != nil || col.sum.Written != len(ss) || col.sum.Duplicates != 0 {
		t.Fatalf("summary %+v, %v", col.sum, col.err)
	}
	recs := envRecords(t, dir)
	if len(recs) != 6 {
		t.Fatalf("%d records, want 6", len(recs))
	}
}

func envRecordsList(t testing.TB, dir string) []*trajectory.Record {
	t.Helper()
	var out []*trajectory.Record
	it := store.Records(dir)
	for it.Next() {
		r := *it.At()
		out = append(out, &r)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEnvReplicaRefusesAnotherPlan: a replica whose flags plan another run
// than the writer's, or that finds no writer, is refused with the reason.
func TestEnvReplicaRefusesAnotherPlan(t *testing.T) {
	ss := envScenarios(t)
	m := envManifest(ss)
	ts := startTestServer(t)
	nc, js := connect(t, ts.url())
	rep := &EnvReplica{NC: nc, JS: js, Manifest: m, Scenarios: ss}
	if err := rep.Attach(context.Background(), 300*time.Millisecond); err == nil || !errors.Is(err, ErrNoWriter) {
		t.Fatalf("no writer: %v", err)
	}
	startCollector(t, ts.url(), filepath.Join(t.TempDir(), "served"), m, ss)
	other := m
	other.Plan.MaxSteps = 5
	for _, tc := range []struct {
		m    store.Manifest
		want string
	}{
		{other, "max_steps: writer 20, replica 5"},
		{func() store.Manifest { o := m; o.Settings.Rewards = "other"; return o }(), "reward configuration"},
		{func() store.Manifest { o := m; o.Version = "test-2"; return o }(), "run one version"},
	} {
		rep := &EnvReplica{NC: nc, JS: js, Manifest: tc.m, Scenarios: ss}
		err := rep.Attach(context.Background(), 10*time.Second)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("want %q, got %v", tc.want, err)
		}
	}
}

// TestEnvReplicaDiesMidEpisode: a replica that dies (its connections cut,
// no shutdown) loses only its unfinished episode: what it published is
// written, the other replica goes on, and the lost episode's rollout index
// is skipped, never reused.
func TestEnvReplicaDiesMidEpisode(t *testing.T) {
	ss := envScenarios(t)
	m := envManifest(ss)
	ts := startTestServer(t)
	dir := filepath.Join(t.TempDir(), "served")
	col := startCollector(t, ts.url(), dir, m, ss)
	a, b := startReplica(t, ts.url(), m, ss), startReplica(t, ts.url(), m, ss)
	drive(t, b.hs.URL, ss[0], 0)
	drive(t, b.hs.URL, ss[0], 2) // two steps in, then b dies
	b.rep.NC.Close()
	b.hs.CloseClientConnections()
	drive(t, a.hs.URL, ss[0], 0)
	waitEnv(t, "both finished episodes", func() bool { return col.records.Load() == 2 })
	b.stop() // the dead replica's session cannot reach the queue any more
	col.stop()
	if col.err != nil || col.sum.Written != 2 || col.sum.Errors != 0 {
		t.Fatalf("summary %+v, %v", col.sum, col.err)
	}
	var rollouts []int
	for _, r := range envRecordsList(t, dir) {
		rollouts = append(rollouts, r.Rollout)
	}
	sort.Ints(rollouts)
	if fmt.Sprint(rollouts) != "[0 2]" {
		t.Fatalf("rollouts %v, want [0 2] (1 was the dead replica's)", rollouts)
	}
}

// TestEnvCollectorSIGKILLed: the writer, a separate process, is SIGKILLed
// while a replica publishes, and episodes go on while it is down;
// restarted on the folder, it ends with every finished episode once (those
// it had fetched and not acked come back after the ack wait, and are
// dropped as duplicates) and no torn record.
func TestEnvCollectorSIGKILLed(t *testing.T) {
	skipFailure(t)
	ss := envScenarios(t)
	m := envManifest(ss)
	ts := startTestServer(t)
	dir := filepath.Join(t.TempDir(), "served")
	env := []string{"QT_URL=" + ts.url(), "QT_DIR=" + dir, "QT_ACKWAIT=1s"}
	p := startProc(t, "envcollect", spec{}, env...)
	x := startReplica(t, ts.url(), m, ss)
	const episodes = 12
	var wg sync.WaitGroup
	for i := range episodes {
		wg.Add(1)
		go func() { defer wg.Done(); drive(t, x.hs.URL, ss[i%len(ss)], 0) }()
	}
	waitFor(t, 20*time.Second, "the writer's first records", func() bool { return lines(dir) > 0 })
	if !p.kill(t) {
		t.Fatalf("the writer ended before it was killed:\n%s", p.out.String())
	}
	wg.Wait()
	for _, s := range ss { // published while no writer runs: only the restarted one can write them
		drive(t, x.hs.URL, s, 0)
	}
	p = startProc(t, "envcollect", spec{}, env...)
	waitFor(t, 20*time.Second, "every episode in the folder", func() bool { return lines(dir) == episodes+len(ss) })
	_, js := connect(t, ts.url())
	waitEnv(t, "the stream to drain", func() bool { return drained(t, js, m.Run) })
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t, 20*time.Second); err != nil {
		t.Fatalf("%v:\n%s", err, p.out.String())
	}
	if got := envRecords(t, dir); len(got) != episodes+len(ss) {
		t.Fatalf("%d records, want %d", len(got), episodes+len(ss))
	}
	b, _ := os.ReadFile(filepath.Join(dir, "trajectories", "part-0-of-1.jsonl"))
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatal("torn last record")
	}
}
