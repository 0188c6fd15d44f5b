package queue

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
)

// Names on JetStream. Every run has its own pair of streams.
const (
	workPrefix      = "ANTIDRIFT_WORK_"
	resultsPrefix   = "ANTIDRIFT_RESULTS_"
	configBucket    = "ANTIDRIFT_RUNS"
	leaseBucket     = "ANTIDRIFT_LEASES"
	workersConsumer = "workers"
	collectConsumer = "coordinator"

	// Format is the layout version of RunConfig and work items; a worker
	// refuses a run of another format.
	Format = 1

	// DefaultAckWait is how long a work item may go without a progress
	// ack before JetStream hands it to another worker.
	DefaultAckWait = 30 * time.Second
	// DefaultMaxDeliver bounds the deliveries of one work item; an item
	// that fails on every one becomes an infrastructure error.
	DefaultMaxDeliver = 5
	// dupWindow is the streams' de-duplication window: a work item or a
	// result published again with the same message id inside it is
	// dropped by the server.
	dupWindow   = 24 * time.Hour
	hdrTraj     = "Antidrift-Traj"
	hdrEncoding = "Antidrift-Encoding"
	// hdrAuth carries a result's authentication: HMAC-SHA256 under the
	// run key of the run, trajectory id and record bytes.
	hdrAuth = "Antidrift-Auth"
	// hdrScenarioHash is the scenario.Hash of the scenario the worker ran.
	hdrScenarioHash = "Antidrift-Scenario-Hash"
)

// leaseTTL is how long a per-endpoint lease outlives a worker that stopped
// refreshing it (killed): its slots come back after it. A variable for the
// tests.
var leaseTTL = 15 * time.Second

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,48}$`)

// RunID is the run's token in stream and subject names: the run name when
// it is a plain token, else a hash of it.
func RunID(run string) string {
	if tokenRE.MatchString(run) {
		return run
	}
	h := sha256.Sum256([]byte(run))
	return "h" + hex.EncodeToString(h[:8])
}

func workStream(id string) string     { return workPrefix + id }
func resultsStream(id string) string  { return resultsPrefix + id }
func workSubject(id string) string    { return "antidrift.work." + id }
func resultsSubject(id string) string { return "antidrift.results." + id }
func eventsSubject(id string) string  { return "antidrift.events." + id }

// announceSubject is where a coordinator says a run has work, so that
// idle workers look at once instead of at their next poll.
const announceSubject = "antidrift.announce"

// RunConfig is what a worker needs to run a run's items: published by the
// coordinator under the run id in the ANTIDRIFT_RUNS object store. It holds
// no credential: API keys come from each worker's environment. Its RunKey
// authenticates the run's results and events, so that a message published
// on the bus by anything that never read this configuration (a stray
// process, a replay, a forgery) cannot stop the run or be written into it;
// protect the bus itself with NATS auth (queue serve --auth-env).
type RunConfig struct {
	Format   int            `json:"format"`
	RunID    string         `json:"run_id"`
	PlanKey  string         `json:"plan_key"`
	Manifest store.Manifest `json:"manifest"`
	// Scenarios are the plan's scenario files, in plan order, as loaded
	// (their bytes: records quote raw values); parsed, their scenario.Hash
	// is Manifest.Plan.ScenarioHash.
	Scenarios      []ScenarioFile `json:"scenarios"`
	AckWaitMS      int64          `json:"ack_wait_ms"`
	MaxDeliver     int            `json:"max_deliver"`
	RequestTimeout string         `json:"request_timeout,omitempty"`
	MaxRetries     int            `json:"max_retries"`
	// TokenParam (openai.ParseTokenParam; empty: auto) and ReadyWait (a
	// duration; "0s" disables waiting; empty: the client's default) are
	// the run's --token-param and --ready-timeout.
	TokenParam string `json:"token_param,omitempty"`
	ReadyWait  string `json:"ready_wait,omitempty"`
	// LearnedTokenParam and NumCtx are what the coordinator's endpoint
	// check learnt (openai.Client.Learned): the token parameter the
	// endpoint takes, an Ollama model's num_ctx (0: unknown; workers then
	// ask /api/show themselves), so that workers, which run no check, send
	// no request the server refuses and tell a silently cut conversation.
	LearnedTokenParam string `json:"learned_token_param,omitempty"`
	NumCtx            int    `json:"num_ctx,omitempty"`
	// RunKey is the run's random key (hex), the same for every publication
	// of one plan: workers sign results and events with it.
	RunKey string `json:"run_key"`

	digest string // of the published bytes, to notice a republished configuration
	// publication identifies this publication of the configuration (the
	// object's NUID, new at every coordinator start): a worker that
	// stopped taking a run for a fatal endpoint error takes it again once
	// the run is started anew.
	publication string
}

func (rc *RunConfig) ackWait() time.Duration {
	if rc.AckWaitMS <= 0 {
		return DefaultAckWait
	}
	return time.Duration(rc.AckWaitMS) * time.Millisecond
}

// planKey identifies a run's plan: a run name reused for another plan
// (rollout --force --run NAME) starts from empty streams.
func planKey(m store.Manifest) string {
	b, _ := json.Marshal(struct {
		Run  string     `json:"run"`
		Plan store.Plan `json:"plan"`
	}{m.Run, m.Plan})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// item is one work item: a planned episode.
type item struct {
	PlanKey  string `json:"plan_key"`
	TrajID   string `json:"traj_id"`
	Scenario string `json:"scenario_id"`
	Rollout  int    `json:"rollout"`
	Seed     int64  `json:"seed"`
	// Config is the digest of the run configuration the item was queued
	// under: a worker holding another reloads it first.
	Config string `json:"config"`
	// Attempt counts the infrastructure errors already recorded for the
	// episode in the run folder: a resumed retry is a new work item.
	Attempt int `json:"attempt"`
}

// msgID is the work item's message id: the trajectory id, suffixed for
// retries on resume so that the de-duplication window lets them through.
func (it item) msgID() string {
	if it.Attempt == 0 {
		return it.TrajID
	}
	return fmt.Sprintf("%s#retry-%d", it.TrajID, it.Attempt)
}

// event is what a worker tells the coordinator it cannot do.
type event struct {
	Worker  string `json:"worker"`
	Kind    string `json:"kind"` // refused | fatal
	Message string `json:"message"`
	// Publication is the run configuration's publication the worker was
	// serving (RunConfig.publication): a coordinator ignores events of an
	// earlier start of the run.
	Publication string `json:"publication"`
	// Auth is sign(run key, run id, worker, kind, message, publication):
	// an event without it is ignored.
	Auth string `json:"auth"`
}

// sign is the hex HMAC-SHA256 of the parts under key, each part
// length-prefixed so that no two lists of parts sign alike.
func sign(key string, parts ...[]byte) string {
	m := hmac.New(sha256.New, []byte(key))
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		m.Write(n[:])
		m.Write(p)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// verify reports whether auth is sign(key, parts...); false when key is
// empty.
func verify(key, auth string, parts ...[]byte) bool {
	if key == "" || auth == "" {
		return false
	}
	return hmac.Equal([]byte(auth), []byte(sign(key, parts...)))
}

func (e event) authParts(runID string) [][]byte {
	return [][]byte{[]byte(runID), []byte(e.Worker), []byte(e.Kind), []byte(e.Message), []byte(e.Publication)}
}

// resultMsgID is a result's message id: the trajectory id and a tag only a
// holder of the run key can compute, so that a result published by anyone
// else under the trajectory id cannot make the server drop the genuine one
// as a duplicate.
func resultMsgID(key, trajID, suffix string) string {
	return trajID + suffix + "." + sign(key, []byte("result"), []byte(trajID+suffix))[:16]
}

// newRunKey is a fresh random run key.
func newRunKey() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("queue: run key: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// ErrStopped is returned (wrapped, with the worker and its message) when a
// worker met a fatal endpoint error or an endpoint refusing every request.
var ErrStopped = errors.New("queue: a worker stopped the run")

// ErrUnreachable is returned when the NATS server cannot be reached.
var ErrUnreachable = errors.New("queue: NATS server unreachable")

// ScenarioFile is one scenario as its file holds it.
type ScenarioFile struct {
	Name string `json:"name"` // as loaded: a path, or builtin:scenarios/...
	Data []byte `json:"data"`
}

// scenarioFiles reads back the files the scenarios were loaded from; a
// scenario built in code (no file) travels as its JSON.
func scenarioFiles(ss []*scenario.Scenario) ([]ScenarioFile, error) {
	out := make([]ScenarioFile, 0, len(ss))
	for _, s := range ss {
		var data []byte
		var err error
		switch {
		case strings.HasPrefix(s.File, suite.Name+":"):
			data, err = fs.ReadFile(suite.FS(), strings.TrimPrefix(s.File, suite.Name+":"))
		case s.File != "":
			data, err = os.ReadFile(s.File)
		default:
			data, err = json.Marshal(s)
		}
		if err != nil {
			return nil, fmt.Errorf("queue: scenario %s: %w", s.ID, err)
		}
		out = append(out, ScenarioFile{Name: s.File, Data: data})
	}
	return out, nil
}

// parseScenarios is the worker's side of scenarioFiles.
func parseScenarios(files []ScenarioFile) ([]*scenario.Scenario, error) {
	out := make([]*scenario.Scenario, 0, len(files))
	for _, f := range files {
		// The coordinator validated them; decoding keeps every raw value's
		// bytes, and the caller checks the hash.
		var s scenario.Scenario
		if err := json.Unmarshal(f.Data, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		s.File = f.Name
		out = append(out, &s)
	}
	return out, nil
}
