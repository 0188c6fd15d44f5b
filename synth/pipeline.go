package synth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/qc"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Probe is a QC probe policy: built per candidate scenario (simulated
// policies read the scenario they play).
type Probe struct {
	Spec string
	New  func(ss []*scenario.Scenario) (policy.Policy, error)
}

// Config is one synthesis run.
type Config struct {
	Dir         string
	Seeds       []Seed
	SeedsSource string

	Designer, Builder, Critic, Matcher Model
	Probes                             []Probe

	Rollouts    int   // per probe and round (the published gate: 4)
	MaxSteps    int   // assistant turns per probe episode
	Seed        int64 // rollout seed
	Rounds      int   // critic rounds before a scenario goes to a human (3)
	Repairs     int   // times validator or battery errors go back to the builder or critic per stage
	MinDrifting int   // probe rollouts that must hit a drift point (2)
	// MinDriftPoints is what the designer is asked for, and the least
	// number of drift points (violations and constraints) a built scenario
	// must keep.
	MinDriftPoints int
	Concurrency    int // seeds in flight
	Limit          int // first N seeds only (0: all)
	Force          bool

	Catalogue *provisions.Catalogue
	// Join are the suites the accepted scenarios will join: duplicates of
	// their scenarios are flagged and their ids are never reused.
	Join      []*scenario.Scenario
	JoinNames []string

	Endpoints map[string]string // role → redacted base URL, for the record
	KeyEnvs   map[string]string // role → key variable name
	Version   string
	// Command is the invocation, redacted, recorded in the folder's lock
	// while the run holds it.
	Command string
	// Progress, when set, sees each seed's stages as they start.
	Progress func(seed, stage string)
}

// Seed outcomes.
const (
	StatusAccepted  = "accepted"
	StatusEscalated = "escalated" // queued for human review
	StatusFailed    = "failed"
	StatusDuplicate = "duplicate"
	StatusError     = "error" // infrastructure: not stored, retried on a rerun
)

// Outcome is what became of one seed.
type Outcome struct {
	Seed   string `json:"seed"`
	Domain string `json:"domain"`
	Status string `json:"status"`
	// Reason classifies a failure or an escalation: designer-unparseable,
	// builder-unparseable, invalid, battery, qc, critic-unparseable,
	// critic-invalid, critic-battery, provisions.
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Round is the critic round whose scenario was accepted or escalated
	// (0: the builder's own).
	Round       int    `json:"round"`
	ScenarioID  string `json:"scenario_id,omitempty"`
	DuplicateOf string `json:"duplicate_of,omitempty"`
	// Accepted is the accepted scenario's file, relative to the run folder.
	Accepted   string                      `json:"accepted,omitempty"`
	Tokens     map[string]trajectory.Usage `json:"tokens"`
	Rounds     []RoundEvidence             `json:"rounds,omitempty"`
	Provisions *ProvisionStats             `json:"provisions,omitempty"`
	Config     string                      `json:"config"`
}

// RoundEvidence is one round's candidate and what the gates made of it.
type RoundEvidence struct {
	Round    int         `json:"round"`
	Scenario string      `json:"scenario"` // file, relative to the run folder
	Repairs  int         `json:"repairs"`
	Problems []string    `json:"problems,omitempty"`
	Battery  *qc.Battery `json:"battery,omitempty"`
	Gate     *qc.Result  `json:"gate,omitempty"`
	// Unchanged: the critic answered with the scenario it was given; it
	// was not checked again, and Battery and Gate are the previous round's.
	Unchanged bool `json:"unchanged,omitempty"`
}

// TokenStage names the QC rollouts' tokens in Outcome.Tokens.
const TokenStage = "qc"

type pipeline struct {
	cfg    Config
	fp     Fingerprint
	fpHash string
}

// Fingerprint returns the configuration a rerun must match.
func (c Config) Fingerprint() Fingerprint {
	var specs []string
	for _, p := range c.Probes {
		specs = append(specs, p.Spec)
	}
	seeds, _ := json.Marshal(c.Seeds)
	cat, _ := json.Marshal(c.Catalogue.Provisions)
	return Fingerprint{
		Seeds: c.SeedsSource, SeedsHash: hashBytes(seeds)[:16],
		Designer: c.Designer.Spec, Builder: c.Builder.Spec, Critic: c.Critic.Spec, Matcher: c.Matcher.Spec,
		Endpoints: c.Endpoints, KeyEnvs: c.KeyEnvs, Probes: specs, Rollouts: c.Rollouts, MaxSteps: c.MaxSteps,
		Seed: c.Seed, Rounds: c.Rounds, Repairs: c.Repairs, MinCovered: 1, MinDrifting: c.MinDrifting,
		MaxTokens: c.Designer.MaxTokens, Temperature: c.Designer.Temperature, Prompts: PromptVersions(),
		Catalogue: hashBytes(cat)[:16], Join: c.JoinNames,
	}
}

func (c *Config) defaults() error {
	if c.Catalogue == nil {
		c.Catalogue = provisions.Builtin()
	}
	if c.Rollouts <= 0 {
		c.Rollouts = 4
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = 20
	}
	if c.MinDriftPoints <= 0 {
		c.MinDriftPoints = 5
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 1
	}
	switch {
	case c.Dir == "":
		return errors.New("synth: no output folder")
	case len(c.Seeds) == 0:
		return errors.New("synth: no seeds")
	case len(c.Probes) == 0:
		return errors.New("synth: no QC probes")
	case c.Rounds < 0 || c.Repairs < 0 || c.MinDrifting < 0:
		return errors.New("synth: rounds, repairs and min-drifting must not be negative")
	}
	for _, m := range []Model{c.Designer, c.Builder, c.Critic, c.Matcher} {
		if m.Policy == nil {
			return errors.New("synth: designer, builder, critic and matcher models are all needed")
		}
	}
	return nil
}

// Run synthesises scenarios from the configured seeds into cfg.Dir and
// returns the summary (also written as summary.json, with review.html).
// A rerun replays stored calls and resumes stored rollouts; seeds already
// decided are not touched. Seeds that hit infrastructure errors are left
// undecided (the summary counts them) and the error is returned.
func Run(ctx context.Context, cfg Config) (*Summary, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	// One writer per folder: the lock the rollout run folder uses. A second
	// synth on the same folder is refused at once, before any model call.
	lock, err := store.LockDir(cfg.Dir, cfg.Command)
	if err != nil {
		return nil, fmt.Errorf("synth: --out %s: %w", cfg.Dir, err)
	}
	defer lock.Release()
	// What a killed run left half-written, at every level of the folder.
	store.SweepTemps(cfg.Dir)
	fp := cfg.Fingerprint()
	if err := claimFolder(cfg.Dir, fp, cfg.Force); err != nil {
		return nil, err
	}
	fb, _ := json.Marshal(fp)
	p := &pipeline{cfg: cfg, fp: fp, fpHash: hashBytes(fb)[:16]}
	seeds := cfg.Seeds
	if cfg.Limit > 0 && cfg.Limit < len(seeds) {
		seeds = seeds[:cfg.Limit]
	}
	outcomes := make([]Outcome, len(seeds))
	errs := make([]error, len(seeds))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < cfg.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				o, err := p.seed(ctx, seeds[i])
				if err != nil {
					o = Outcome{Seed: seeds[i].ID, Domain: seeds[i].Domain, Status: StatusError, Detail: err.Error()}
				}
				outcomes[i], errs[i] = o, err
			}
		}()
	}
feed:
	for i := range seeds {
		select {
		case next <- i:
		case <-ctx.Done():
			for j := i; j < len(seeds); j++ {
				outcomes[j] = Outcome{Seed: seeds[j].ID, Domain: seeds[j].Domain, Status: StatusError, Detail: "not started: " + ctx.Err().Error()}
				errs[j] = ctx.Err()
			}
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := p.finish(outcomes); err != nil {
		return nil, err
	}
	sum := summarise(cfg, outcomes)
	if err := writeJSONAtomic(filepath.Join(cfg.Dir, "summary.json"), sum); err != nil {
		return nil, err
	}
	if err := writeReview(cfg.Dir, sum); err != nil {
		return nil, err
	}
	var failed []string
	for i, err := range errs {
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", seeds[i].ID, err))
		}
	}
	if len(failed) > 0 {
		return sum, fmt.Errorf("synth: %d seeds undecided (rerun to retry them):\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return sum, nil
}

func (p *pipeline) progress(seed, stage string) {
	if p.cfg.Progress != nil {
		p.cfg.Progress(seed, stage)
	}
}

// seed runs one seed through every stage, or returns its stored outcome.
func (p *pipeline) seed(ctx context.Context, sd Seed) (Outcome, error) {
	dir := filepath.Join(p.cfg.Dir, "seeds", sd.ID)
	final := filepath.Join(dir, "outcome.json")
	if exists(final) {
		var o Outcome
		if err := readJSON(final, &o); err != nil {
			return Outcome{}, err
		}
		if o.Config == p.fpHash {
			if o.Status == StatusDuplicate {
				// Deduplication runs again over this run's set, in finish.
				o.Status, o.DuplicateOf = StatusAccepted, ""
			}
			return o, nil
		}
		// The configuration changed under --force: redo the seed,
		// replaying the calls whose prompts are unchanged.
	}
	log, err := openCallLog(filepath.Join(dir, "calls"), p.cfg.Force)
	if err != nil {
		return Outcome{}, err
	}
	o := Outcome{Seed: sd.ID, Domain: sd.Domain, Config: p.fpHash}
	decide := func(status, reason, detail string) (Outcome, error) {
		o.Status, o.Reason, o.Detail = status, reason, detail
		o.Tokens = log.usage()
		if u := p.qcTokens(dir); u.TotalTokens > 0 {
			o.Tokens[TokenStage] = u
		}
		if err := writeJSONAtomic(final, o); err != nil {
			return Outcome{}, err
		}
		return o, nil
	}

	// Stage 1: the designer's playbook.
	p.progress(sd.ID, StageDesign)
	msgs, err := conversation(designerPrompt, designerData{Seed: sd, Jurisdictions: p.jurisdictions(), MinTools: 6, MinDriftPoints: p.cfg.MinDriftPoints})
	if err != nil {
		return Outcome{}, err
	}
	minPoints := p.cfg.MinDriftPoints
	ans, _, err := log.ask(ctx, StageDesign, 0, p.cfg.Designer, msgs, func(a string) error { _, err := parsePlaybook(a, minPoints); return err })
	if errors.Is(err, ErrUnparseable) {
		return decide(StatusFailed, "designer-unparseable", err.Error())
	}
	if err != nil {
		return Outcome{}, err
	}
	playbook, _ := parsePlaybook(ans, minPoints)

	// Stage 2: the builder's scenario, repaired from the validator's and
	// the battery's errors.
	p.progress(sd.ID, StageBuild)
	msgs, err = conversation(builderPrompt, builderData{Seed: sd, Playbook: string(playbook), Format: formatText})
	if err != nil {
		return Outcome{}, err
	}
	b, err := p.buildLoop(ctx, log, StageBuild, StageBuildRepair, builderPrompt, 0, p.cfg.Builder, msgs, sd, nil)
	if errors.Is(err, ErrUnparseable) {
		return decide(StatusFailed, "builder-unparseable", err.Error())
	}
	if err != nil {
		return Outcome{}, err
	}
	var res qc.Result
	for round := 0; ; round++ {
		rel := filepath.Join("seeds", sd.ID, fmt.Sprintf("round-%d", round))
		if err := writeFileAtomic(filepath.Join(p.cfg.Dir, rel, "scenario.json"), b.raw); err != nil {
			return Outcome{}, err
		}
		ev := RoundEvidence{Round: round, Scenario: filepath.ToSlash(filepath.Join(rel, "scenario.json")), Repairs: b.repairs, Problems: b.problems, Battery: b.battery, Unchanged: b.unchanged}
		if len(b.problems) > 0 {
			o.Rounds = append(o.Rounds, ev)
			o.Round = round
			if round == 0 {
				return decide(StatusFailed, b.reason, strings.Join(b.problems, "\n"))
			}
			return decide(StatusEscalated, "critic-"+b.reason, strings.Join(b.problems, "\n"))
		}
		// Stage 3: execution QC with the probes.
		// An unchanged revision keeps the verdict its scenario already had:
		// the same scenario would only spend the probes' calls again.
		if !b.unchanged {
			p.progress(sd.ID, fmt.Sprintf("qc round %d", round))
			if res, err = p.gate(ctx, b.s, filepath.Join(p.cfg.Dir, rel, "qc")); err != nil {
				return Outcome{}, err
			}
		}
		gate := res // each round keeps its own copy
		ev.Gate = &gate
		o.Rounds = append(o.Rounds, ev)
		o.Round = round
		if res.Pass {
			break
		}
		if round == p.cfg.Rounds {
			return decide(StatusEscalated, "qc", fmt.Sprintf("still failing the gate after %d critic rounds: %s", p.cfg.Rounds, res.Reason))
		}
		// The critic revises what failed, with the gate's evidence.
		p.progress(sd.ID, fmt.Sprintf("critic round %d", round+1))
		msgs, err = conversation(criticPrompt, criticData{Round: round + 1, Rounds: p.cfg.Rounds, Reason: res.Reason,
			Evidence: evidence(b.s, res), Scenario: string(b.raw), Format: formatText})
		if err != nil {
			return Outcome{}, err
		}
		nb, err := p.buildLoop(ctx, log, StageCritic, StageCriticRepair, criticPrompt, round+1, p.cfg.Critic, msgs, sd, &b)
		if errors.Is(err, ErrUnparseable) {
			return decide(StatusEscalated, "critic-unparseable", err.Error())
		}
		if err != nil {
			return Outcome{}, err
		}
		b = nb
	}

	// Provisions matched from the catalogue, per drift point.
	p.progress(sd.ID, StageProvisions)
	raw, stats, err := p.matchProvisions(ctx, log, b.s, b.raw)
	if errors.Is(err, ErrUnparseable) {
		return decide(StatusEscalated, "provisions", err.Error())
	}
	if err != nil {
		return Outcome{}, err
	}
	o.Provisions = &stats
	s, probs := p.validate(raw, sd)
	if len(probs) > 0 {
		return decide(StatusEscalated, "provisions", strings.Join(probs, "\n"))
	}
	rel := filepath.ToSlash(filepath.Join("seeds", sd.ID, "scenario.json"))
	if err := writeFileAtomic(filepath.Join(p.cfg.Dir, rel), raw); err != nil {
		return Outcome{}, err
	}
	o.ScenarioID = s.ID
	o.Accepted = rel
	return decide(StatusAccepted, "", "")
}

// built is a candidate scenario after the builder's (or critic's) repairs.
type built struct {
	s        *scenario.Scenario
	raw      []byte
	repairs  int
	problems []string    // left after the last repair
	reason   string      // invalid or battery, when problems remain
	battery  *qc.Battery // the battery's verdict, when it ran
	// unchanged: the critic's answer is the scenario it was given (same
	// JSON value), not checked again.
	unchanged bool
}

// buildLoop asks for a scenario and feeds validation and battery errors
// back, at most Repairs times. prev is the scenario a critic revises: a
// first answer that is the same JSON value is returned as it was, marked
// unchanged, without running the checks again.
func (p *pipeline) buildLoop(ctx context.Context, log *callLog, stage, repairStage, prompt string, round int, m Model, msgs []trajectory.Message, sd Seed, prev *built) (built, error) {
	ans, conv, err := log.ask(ctx, stage, round, m, msgs, parseScenarioAnswer)
	if err != nil {
		return built{}, err
	}
	for rep := 0; ; rep++ {
		raw, _ := extractScenario(ans)
		if rep == 0 && prev != nil && sameJSON(raw, prev.raw) {
			same := *prev
			same.raw, same.repairs, same.unchanged = raw, 0, true
			return same, nil
		}
		s, probs, bat := p.checkAll(ctx, raw, sd)
		b := built{s: s, raw: raw, repairs: rep, battery: bat}
		if len(probs) == 0 {
			return b, nil
		}
		b.problems, b.reason = probs, "invalid"
		if strings.HasPrefix(probs[0], batteryPrefix) {
			b.reason = "battery"
		}
		if rep == p.cfg.Repairs {
			return b, nil
		}
		text, err := render(prompt, "repair", repairData{Problems: strings.Join(probs, "\n")})
		if err != nil {
			return built{}, err
		}
		msgs = append(conv, trajectory.Message{Role: trajectory.RoleUser, Content: text})
		ans, conv, err = log.ask(ctx, repairStage, round, m, msgs, parseScenarioAnswer)
		if err != nil {
			return built{}, err
		}
	}
}

// sameJSON reports whether a and b hold the same JSON value (spacing and
// key order aside).
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
