package pairs

import (
	"fmt"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// cacheRecords bounds the records pairing holds at once: those of the pairs
// being rendered, and of the few items whose checks need their messages
// (MaxChars sizes, arguments that never parsed), most recently used kept.
const cacheRecords = 64

// recordCache reads a scenario's records again by rank (dataset.Index.LoadAt),
// relabelled as the scan saw them (Relabel is deterministic).
type recordCache struct {
	ix      *dataset.Index
	sid     string
	relabel func(*trajectory.Record) (bool, error)
	ents    []cached // at most cacheRecords
	clock   int

	loads, maxHeld int // what a test checks: reads, and records held at most
}

type cached struct {
	k    int
	used int
	rec  *trajectory.Record
}

func (c *recordCache) reset(sid string) {
	c.sid = sid
	clear(c.ents)
	c.ents = c.ents[:0]
}

// get returns the item's record.
func (c *recordCache) get(it *item) (*trajectory.Record, error) {
	c.clock++
	for i := range c.ents {
		if c.ents[i].k == it.k {
			c.ents[i].used = c.clock
			return c.ents[i].rec, nil
		}
	}
	r, err := c.ix.LoadAt(c.sid, it.k)
	if err != nil {
		return nil, err
	}
	c.loads++
	if c.relabel != nil {
		keep, err := c.relabel(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.ix.Where(r.TrajID), err)
		}
		if !keep { // the scan kept it: Relabel is not deterministic
			return nil, fmt.Errorf("%s: the labeling left out a trajectory it kept before", c.ix.Where(r.TrajID))
		}
	}
	e := cached{k: it.k, used: c.clock, rec: r}
	if len(c.ents) < cacheRecords {
		c.ents = append(c.ents, e)
	} else {
		old := 0
		for i := range c.ents {
			if c.ents[i].used < c.ents[old].used {
				old = i
			}
		}
		c.ents[old] = e
	}
	c.maxHeld = max(c.maxHeld, len(c.ents))
	return r, nil
}
