package synth

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/antidrift/antidrift/rollout/probe"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Summary is a run's result: outcomes counted, tokens per stage and per
// accepted scenario, provision matching, and every seed's outcome.
type Summary struct {
	Seeds     int `json:"seeds"`
	Accepted  int `json:"accepted"`
	Escalated int `json:"escalated"`
	// AcceptedByRound counts accepted scenarios by the critic round that
	// produced them ("0": the builder's own).
	AcceptedByRound map[string]int `json:"accepted_by_round"`
	Failed          map[string]int `json:"failed_by_reason"`
	EscalatedBy     map[string]int `json:"escalated_by_reason"`
	Duplicates      int            `json:"duplicates"`
	Undecided       int            `json:"undecided"`
	// Tokens sums the stored model calls' usage by stage (design, build,
	// critic, provisions; qc for probe endpoints).
	Tokens      map[string]trajectory.Usage `json:"tokens"`
	TotalTokens int                         `json:"total_tokens"`
	// TokensPerAccepted is every token spent, over the accepted scenarios.
	TokensPerAccepted float64        `json:"tokens_per_accepted"`
	Provisions        ProvisionStats `json:"provisions"`
	Outcomes          []Outcome      `json:"outcomes"`
}

func summarise(cfg Config, outcomes []Outcome) *Summary {
	s := &Summary{Seeds: len(outcomes), AcceptedByRound: map[string]int{}, Failed: map[string]int{},
		EscalatedBy: map[string]int{}, Tokens: map[string]trajectory.Usage{}, Outcomes: outcomes}
	for _, o := range outcomes {
		switch o.Status {
		case StatusAccepted:
			s.Accepted++
			s.AcceptedByRound[strconv.Itoa(o.Round)]++
		case StatusEscalated:
			s.Escalated++
			s.EscalatedBy[o.Reason]++
		case StatusFailed:
			s.Failed[o.Reason]++
		case StatusDuplicate:
			s.Duplicates++
		default:
			s.Undecided++
		}
		for st, u := range o.Tokens {
			s.Tokens[st] = s.Tokens[st].Add(u)
			s.TotalTokens += u.TotalTokens
		}
		if o.Provisions != nil {
			s.Provisions.add(*o.Provisions)
		}
	}
	if s.Accepted > 0 {
		s.TokensPerAccepted = float64(s.TotalTokens) / float64(s.Accepted)
	}
	return s
}

// WriteTable prints the summary for a terminal.
func (s *Summary) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "SEED\tDOMAIN\tRESULT\tROUND\tSCENARIO\tTOKENS\tREASON\n")
	for _, o := range s.Outcomes {
		tok := 0
		for _, u := range o.Tokens {
			tok += u.TotalTokens
		}
		why := o.Reason
		if o.DuplicateOf != "" {
			why = "duplicate of " + o.DuplicateOf
		}
		if o.Status == StatusError {
			why = probe.Oneline(o.Detail, 100)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%s\n", o.Seed, o.Domain, o.Status, o.Round, o.ScenarioID, tok, why)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d seeds: %d accepted (%s), %d escalated to review, %d failed%s, %d duplicates, %d undecided\n",
		s.Seeds, s.Accepted, counts(s.AcceptedByRound, "round "), s.Escalated, sum(s.Failed), reasons(s.Failed), s.Duplicates, s.Undecided)
	var stages []string
	for st := range s.Tokens {
		stages = append(stages, st)
	}
	sort.Strings(stages)
	var parts []string
	for _, st := range stages {
		u := s.Tokens[st]
		parts = append(parts, fmt.Sprintf("%s %d (%d in, %d out)", st, u.TotalTokens, u.PromptTokens, u.CompletionTokens))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "tokens: %s; %d in all, %.0f per accepted scenario\n", strings.Join(parts, ", "), s.TotalTokens, s.TokensPerAccepted)
	}
	p := s.Provisions
	if p.Proposed > 0 {
		fmt.Fprintf(w, "provisions: %d proposed, %d kept; dropped %d outside the catalogue, %d outside the jurisdiction, %d over the limit of %d, %d repeated\n",
			p.Proposed, p.Kept, p.OutsideCatalogue, p.OutsideJurisdiction, p.OverLimit, MaxProvisionsPerPoint, p.Repeated)
	}
}

func counts(m map[string]int, prefix string) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var out []string
	for _, k := range ks {
		out = append(out, fmt.Sprintf("%s%s: %d", prefix, k, m[k]))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func reasons(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	return " (" + counts(m, "") + ")"
}
