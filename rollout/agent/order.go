package agent

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/scenario"
)

// ToolOrder is how an episode's tools are ordered in what the model sees.
// The authored order teaches where allowed tools sit (in most files they
// come first), so a policy could avoid drift by position alone; a drawn
// order carries no such signal.
type ToolOrder uint8

const (
	// ToolOrderSeeded draws the order from the run seed and the scenario
	// (SeededOrder): every rollout, checkpoint and framework of a scenario
	// under one seed sees the same order, so that pairs share their prompt
	// and GRPO groups their first request, and another seed gives another
	// order.
	ToolOrderSeeded ToolOrder = iota
	// ToolOrderAuthored keeps the scenario file's order.
	ToolOrderAuthored
)

// ToolOrders are the names ParseToolOrder reads.
var ToolOrders = []string{"seeded", "authored"}

func (o ToolOrder) String() string {
	if o == ToolOrderAuthored {
		return "authored"
	}
	return "seeded"
}

// ParseToolOrder reads "seeded" or "authored".
func ParseToolOrder(v string) (ToolOrder, error) {
	switch v {
	case "seeded":
		return ToolOrderSeeded, nil
	case "authored":
		return ToolOrderAuthored, nil
	}
	return 0, fmt.Errorf("unknown tool order %q (known: seeded, authored)", v)
}

// SeededOrder is the order in which the scenario's tools are presented
// under a run seed: indices into s.Tools, sorted by a hash of the seed, the
// scenario id and the tool's name. A hash rather than a shuffle of the
// authored list, so that the order depends on no random-number algorithm
// (it is the same under every Go version) and adding a tool to a scenario
// moves no other tool relative to the rest.
func SeededOrder(s *scenario.Scenario, runSeed int64) []int {
	keys := make([]uint64, len(s.Tools))
	prefix := "antidrift tool order\x00" + strconv.FormatInt(runSeed, 10) + "\x00" + s.ID + "\x00"
	for i := range s.Tools {
		sum := sha256.Sum256([]byte(prefix + s.Tools[i].Name))
		keys[i] = binary.BigEndian.Uint64(sum[:8])
	}
	order := make([]int, len(s.Tools))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case keys[a] < keys[b]:
			return -1
		case keys[a] > keys[b]:
			return 1
		}
		return a - b
	})
	return order
}

// presented is an episode's tools in the order the model sees them: idx
// holds indices into the scenario's tools, tools and names follow it.
type presented struct {
	idx   []int
	tools []policy.Tool
	names []string
}

// present orders the prepared scenario's tools by order (nil, or a list
// that is no permutation of the tools: as authored).
func (p *Scenario) present(order []int) presented {
	if !isPermutation(order, len(p.tools)) {
		if len(p.identity) != len(p.tools) || len(p.names) != len(p.tools) { // a Scenario made without Prepare
			pr := presented{idx: make([]int, len(p.tools)), tools: p.tools, names: make([]string, len(p.tools))}
			for i, t := range p.tools {
				pr.idx[i], pr.names[i] = i, t.Name
			}
			return pr
		}
		return presented{idx: p.identity, tools: p.tools, names: p.names}
	}
	c := &p.orders
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pr.idx != nil && &c.pr.idx[0] == &order[0] {
		return c.pr // the run's order (Order): every episode shares its lists
	}
	pr := presented{idx: order, tools: make([]policy.Tool, len(order)), names: make([]string, len(order))}
	for k, i := range order {
		pr.tools[k] = p.tools[i]
		pr.names[k] = p.tools[i].Name
	}
	if c.order != nil && &c.order[0] == &order[0] {
		c.pr = pr
	}
	return pr
}

func isPermutation(order []int, n int) bool {
	if len(order) != n || n == 0 {
		return false
	}
	var stack [64]bool
	seen := stack[:0]
	if n <= len(stack) {
		seen = stack[:n]
	} else {
		seen = make([]bool, n)
	}
	for _, i := range order {
		if i < 0 || i >= n || seen[i] {
			return false
		}
		seen[i] = true
	}
	return true
}

// orderCache keeps a prepared scenario's last seeded order: a run draws
// every episode's order from one run seed.
type orderCache struct {
	mu    sync.Mutex
	seed  int64
	order []int
	// pr is the tools presented in order, once an episode asked: shared,
	// read-only, as the order is.
	pr presented
}

// Order is the order the episodes of a run with this seed present the
// scenario's tools in (SeededOrder), computed once per seed; the slice is
// shared and must not be changed.
func (p *Scenario) Order(runSeed int64) []int {
	c := &p.orders
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.order == nil || c.seed != runSeed {
		c.seed, c.order, c.pr = runSeed, SeededOrder(p.S, runSeed), presented{}
	}
	return c.order
}
