package trajectory

import "github.com/antidrift/antidrift/rollout/drift"

// CountedMatches are the record's drift matches that count by type, kind
// and provision: each drifting call once by type, an annotation's labels
// winning over the derived matches of the same call (drift.Counted). The
// record keeps every match in Matches.
func (r *Record) CountedMatches() []drift.Match { return drift.Counted(r.Matches) }
