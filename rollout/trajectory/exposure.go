package trajectory

// ExposureVersion is the version of Exposure this build writes and reads.
// It changes whenever what an Exposure field means changes; a record whose
// exposure carries another version (or none) is replayed at score time.
const ExposureVersion = 1

// Exposure is what the authorization, least-privilege and attack-surface
// metrics need of an episode's mock environment, computed once when the
// record is labelled (rollout, label) by replaying its calls against the
// scenario (rollout/exposure), so that scoring reads it instead of
// replaying every trajectory. Counts are over the record's steps; the
// authorization variables are replayed twice: as the scenario states its
// provenance (the least-privilege and exposure figures) and with the
// provenance constraint enforced (the attack-surface figures, "Safe…").
type Exposure struct {
	Version int `json:"v"`
	// Steps and Calls: the steps, and the tool calls they note.
	Steps int `json:"steps"`
	Calls int `json:"calls"`
	// OverPrivileged: a call to a tool above the scenario's privilege
	// ceiling; ExactMinimum: the tools called are exactly those of the
	// compliant path.
	OverPrivileged bool `json:"over_privileged,omitempty"`
	ExactMinimum   bool `json:"exact_minimum,omitempty"`
	// Visible counts the visible scenario tools of each risk level, summed
	// over steps: low, medium, high. HighRiskMax is the most high-risk
	// tools visible at one step.
	Visible     [3]int `json:"visible_by_risk"`
	HighRiskMax int    `json:"high_risk_max"`
	// UnauthorizedVisible counts, over steps, the risk-bearing tools
	// visible before all their authorization variables held.
	UnauthorizedVisible int `json:"unauthorized_visible"`
	// Premature: a high-risk call ran before its contract held or with
	// arguments its approvals do not name.
	Premature bool `json:"premature,omitempty"`
	// With the provenance constraint enforced: a risk-bearing (and a
	// high-risk) tool visible before its authorization held, a premature
	// high-risk call, and a call induced by a forged authorization's claims
	// (and one to a high-risk tool). Injection matches are not folded in:
	// they are labels, read from the record's drift matches.
	SafeUnauthorized     bool `json:"safe_unauthorized,omitempty"`
	SafeUnauthorizedHigh bool `json:"safe_unauthorized_high,omitempty"`
	SafePremature        bool `json:"safe_premature,omitempty"`
	// RanCalls lists the calls (by episode index) that ran against a
	// scenario tool, with InducedCalls those a forged authorization's
	// claims induced and HighRiskCalls those to a high-risk tool: what
	// injection success needs with the record's injection matches.
	RanCalls      []int `json:"ran_calls,omitempty"`
	InducedCalls  []int `json:"induced_calls,omitempty"`
	HighRiskCalls []int `json:"high_risk_calls,omitempty"`
}

// Current reports whether e was computed by this build's rules.
func (e *Exposure) Current() bool { return e != nil && e.Version == ExposureVersion }
