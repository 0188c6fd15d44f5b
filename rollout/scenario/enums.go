package scenario

import (
	"strconv"
	"strings"
)

// Risk is a tool's risk level.
type Risk string

// Risk levels.
const (
	RiskLow    Risk = "low"
	RiskMedium Risk = "medium"
	RiskHigh   Risk = "high"
)

// Valid reports whether r is a known risk level.
func (r Risk) Valid() bool { return r == RiskLow || r == RiskMedium || r == RiskHigh }

// Bearing reports whether the risk is medium or high: such tools are gated.
func (r Risk) Bearing() bool { return r == RiskMedium || r == RiskHigh }

// DriftType is the boundary component a drift crosses.
type DriftType string

// Drift types: the four components of the boundary B = (D, T, S, H).
const (
	DriftData  DriftType = "data"
	DriftTool  DriftType = "tool"
	DriftScope DriftType = "scope"
	DriftTime  DriftType = "time"
)

// DriftTypes lists the drift types in a fixed order.
var DriftTypes = []DriftType{DriftData, DriftTool, DriftScope, DriftTime}

// Valid reports whether d is a known drift type.
func (d DriftType) Valid() bool {
	return d == DriftData || d == DriftTool || d == DriftScope || d == DriftTime
}

// ViolationKind is how a drift relates to the user's intent.
type ViolationKind string

// Violation kinds.
const (
	KindPurposeLimitation   ViolationKind = "purpose_limitation"
	KindDataMinimization    ViolationKind = "data_minimization"
	KindExplicitProhibition ViolationKind = "explicit_prohibition"
	KindImplicitRedLine     ViolationKind = "implicit_red_line"
	// KindInjection marks the high-risk call an injection tries to induce:
	// "injection success" is a trajectory making it.
	KindInjection ViolationKind = "injection"
	// KindPrematureAction marks a call made before what its contract
	// requires was produced in the episode (a refund before the policy
	// was read): derived scope drift, never annotated.
	KindPrematureAction ViolationKind = "premature_action"
)

// ViolationKinds lists the violation kinds in a fixed order.
var ViolationKinds = []ViolationKind{KindPurposeLimitation, KindDataMinimization, KindExplicitProhibition, KindImplicitRedLine, KindInjection, KindPrematureAction}

// Valid reports whether k is a known violation kind.
func (k ViolationKind) Valid() bool {
	switch k {
	case KindPurposeLimitation, KindDataMinimization, KindExplicitProhibition, KindImplicitRedLine, KindInjection, KindPrematureAction:
		return true
	}
	return false
}

// Domains are the built-in suite's domains; user scenarios may name others.
var Domains = []string{"productivity", "communication", "finance", "security", "data_research", "health", "commerce"}

// TimeKind says how a time drift steps past the task's time boundary. It
// is set on time drift points only, so that a suite can be checked for
// variety (not every time drift a scheduler call) and metrics can be split
// by it.
type TimeKind string

// Time-drift kinds.
const (
	// TimeSchedule defers or automates an action the task asked for now
	// (a scheduler, an automation rule, a standing job).
	TimeSchedule TimeKind = "schedule"
	// TimeRecurrence repeats a permitted effect that was asked once.
	TimeRecurrence TimeKind = "recurrence"
	// TimeDuration sets a duration, expiry or end date on a permitted effect
	// beyond what was asked (a share link with no expiry, a hold for a year).
	TimeDuration TimeKind = "duration"
	// TimeWindow reads or acts on records outside the time window the task
	// allows (last quarter's tickets when this week's were asked).
	TimeWindow TimeKind = "window"
	// TimeRetention keeps data after the task needs it (a saved copy, a
	// retained export, a cache left behind, a deletion skipped or deferred).
	TimeRetention TimeKind = "retention"
	// TimeDeadline acts after a deadline the task or its data states.
	TimeDeadline TimeKind = "deadline"
)

// TimeKinds lists the time-drift kinds in a fixed order.
var TimeKinds = []TimeKind{TimeSchedule, TimeRecurrence, TimeDuration, TimeWindow, TimeRetention, TimeDeadline}

// TimeKindOf is the time-drift kind of what a drift match names: the
// annotated violation at index violation (when it is 0 or more), else the
// constraint of rule ("boundary.constraints[i]" or
// "boundary.constraints[i]:ID"). "" when neither has one.
func (s *Scenario) TimeKindOf(violation int, rule string) TimeKind {
	if violation >= 0 {
		if violation < len(s.Violations) {
			return s.Violations[violation].TimeKind
		}
		return ""
	}
	rest, ok := strings.CutPrefix(rule, "boundary.constraints[")
	if !ok {
		return ""
	}
	num, _, ok := strings.Cut(rest, "]")
	i, err := strconv.Atoi(num)
	if !ok || err != nil || i < 0 || i >= len(s.Boundary.Constraints) {
		return ""
	}
	return s.Boundary.Constraints[i].TimeKind
}

// Valid reports whether k is a known time-drift kind.
func (k TimeKind) Valid() bool {
	for _, x := range TimeKinds {
		if k == x {
			return true
		}
	}
	return false
}

func (k TimeKind) String() string { return string(k) }
