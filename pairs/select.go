package pairs

import "sort"

func byKey(its []*item) {
	sort.Slice(its, func(i, j int) bool {
		a, b := its[i].key, its[j].key
		for k := range a {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return its[i].k < its[j].k // by traj_id: ranks are in traj_id order
	})
}

// pool selects pairs of one type within one pool.
//
// Chosen are the clean successes; rejected the drifting trajectories,
// shortcuts (drifting successes) first, then drifting failures, each class
// in a seeded order. Selection goes in rounds: in each round every rejected
// trajectory (in order) is paired with the next chosen (round-robin) that
// has uses left, has not been tried with it and gives a valid pair; round r
// only takes rejected trajectories used r times, so that distinct
// trajectories are paired before any is reused. It stops at K pairs or when
// no trajectory has uses left.
//
// The candidates are decided by sig (builder.memo, sweep), with the same
// pairs, counts and reasons as trying each one in turn
// (TestMemoChangesNothing).
func (b *builder) pool(pool []*item, typ, split string) error {
	ts := b.stats.typ(typ)
	var chosen, shortcuts, failures []*item
	for _, it := range pool {
		switch it.class {
		case classClean:
			chosen = append(chosen, it)
		case classShortcut:
			shortcuts = append(shortcuts, it)
		case classDriftFailure:
			failures = append(failures, it)
		}
	}
	byKey(chosen)
	byKey(shortcuts)
	byKey(failures)
	rejected := append(shortcuts, failures...)
	ts.Pools++
	switch {
	case len(chosen) == 0 && len(rejected) == 0:
		ts.PoolsNeither++
		return nil
	case len(chosen) == 0:
		ts.PoolsNoClean++
		for range rejected {
			ts.UnusedRejected[ReasonNoClean]++
		}
		return nil
	case len(rejected) == 0:
		ts.PoolsNoDrift++
		for range chosen {
			ts.UnusedChosen[ReasonNoDrift]++
		}
		return nil
	}
	K, M := b.opt.MaxPerScenario, b.opt.MaxReuse
	if K <= 0 {
		K = int(^uint(0) >> 1)
	}
	if M <= 0 {
		M = len(chosen) + len(rejected)
	}
	for _, it := range pool {
		it.uses, it.lastFail, it.touched, it.tried = 0, 0, 0, nil
	}
	// The chosen's distinct sigs, with how many of each have uses left: a
	// visit whose every candidate fails is counted per sig (sweep).
	sigs := b.sigsOf(chosen)
	defer b.resetSigs(sigs)
	eligible := len(chosen)
	for i, c := range chosen {
		c.ci = i
	}
	b.gen++ // a new pool and type: no memo applies
	prevSig := -1
	var dropped [nReasons]int
	// A rejected trajectory is visited again in a later round only when it
	// was paired in this one, so what it was tried with is kept only then.
	var tried []int // the chosen tried with the rejected of this visit
	count, ptr, capped := 0, 0, false
	visit, swept := 0, 0 // visits so far; the last visit counted by sweep
	for round := 0; round < M && !capped; round++ {
		for _, r := range rejected {
			if r.uses != round {
				continue
			}
			if count >= K {
				capped = true
				break
			}
			if r.sig != prevSig {
				b.gen++
				prevSig = r.sig
			}
			visit++
			if r.tried == nil && !b.noMemo && len(sigs)*sweepShare <= eligible {
				ok, err := b.sweep(r, typ, sigs, &dropped)
				if err != nil {
					return err
				}
				if ok {
					// the last chosen tried: the last with uses left before ptr
					for j := len(chosen) - 1; j >= 0; j-- {
						if c := chosen[(ptr+j)%len(chosen)]; c.uses < M {
							r.lastFail = b.memo[c.sig]
							break
						}
					}
					swept = visit
					continue
				}
			}
			tried = tried[:0]
			for j := 0; j < len(chosen); j++ {
				c := chosen[(ptr+j)%len(chosen)]
				if c.uses >= M || r.wasTried(c.ci) {
					continue
				}
				tried = append(tried, c.ci)
				var reason int8
				if b.memoGen[c.sig] == b.gen && !b.noMemo {
					reason = b.memo[c.sig]
				} else {
					row, why, err := b.candidate(c, r, typ, split)
					if err != nil {
						return err
					}
					if why == reasonNone {
						if err := b.emit(row); err != nil {
							return err
						}
						c.uses++
						r.uses++
						count++
						if c.uses == M {
							b.sigLeft[c.sig]--
							eligible--
						}
						ptr = (ptr + j + 1) % len(chosen)
						ts.pair(row, r.class == classShortcut)
						if r.uses < M { // visited again next round
							r.setTried(tried, len(chosen))
						}
						break
					}
					reason = why
					b.memo[c.sig], b.memoGen[c.sig] = why, b.gen
				}
				dropped[reason]++
				c.lastFail, r.lastFail, c.touched = reason, reason, visit
			}
		}
	}
	// A sweep tried every chosen with uses left, and those never used
	// (the only ones whose last failure is reported) always had uses left.
	if swept > 0 {
		for _, c := range chosen {
			if c.touched < swept {
				c.lastFail = b.swept[c.sig]
			}
		}
	}
	for i, n := range dropped {
		if n > 0 {
			ts.Dropped[reasonNames[i]] += n
		}
	}
	if count > 0 {
		ts.PoolsWithPairs++
	} else {
		ts.PoolsNoValidPair++
	}
	unused := func(it *item, m map[string]int) {
		switch {
		case it.uses > 0:
		case it.lastFail != reasonNone:
			m[reasonNames[it.lastFail]]++
		case capped:
			m[ReasonCap]++
		default:
			m[ReasonReuse]++
		}
	}
	for _, c := range chosen {
		if c.uses > 0 {
			ts.ChosenUsed++
		}
		unused(c, ts.UnusedChosen)
	}
	for _, r := range rejected {
		if r.uses > 0 {
			ts.RejectedUsed++
		}
		unused(r, ts.UnusedRejected)
	}
	return nil
}

func (it *item) wasTried(ci int) bool {
	return it.tried != nil && it.tried[ci/64]&(1<<(ci%64)) != 0
}

func (it *item) setTried(cis []int, n int) {
	if it.tried == nil {
		it.tried = make([]uint64, (n+63)/64)
	}
	for _, ci := range cis {
		it.tried[ci/64] |= 1 << (ci % 64)
	}
}

// sigsOf lists the distinct sigs of the chosen and counts them (sigLeft).
func (b *builder) sigsOf(chosen []*item) []int {
	var sigs []int
	for _, c := range chosen {
		if b.sigLeft[c.sig] == 0 {
			sigs = append(sigs, c.sig)
			b.sigRep[c.sig] = c
		}
		b.sigLeft[c.sig]++
	}
	return sigs
}

func (b *builder) resetSigs(sigs []int) {
	for _, s := range sigs {
		b.sigLeft[s], b.sigRep[s] = 0, nil
	}
}

// sweepShare: a visit is swept when the chosen with uses left are at least
// this many times their sigs. A sweep that finds a pair wastes at most
// the sigs' candidates the visit would not have reached (their failures
// stay in the memo): a quarter of a visit at most.
const sweepShare = 4

// sweep decides the visit of r at once when every chosen with uses left
// fails with it: one candidate per sig (memo), the failures counted per
// sig, and the reasons kept for the chosen's last failure (builder.swept).
// It reports false, having changed nothing but the memo, when some sig
// would give a pair: then the visit goes candidate by candidate, in order.
// A pool of copies of a few episodes thus costs its sigs per visit, not
// its trajectories.
func (b *builder) sweep(r *item, typ string, sigs []int, dropped *[nReasons]int) (bool, error) {
	for _, s := range sigs {
		if b.sigLeft[s] == 0 || b.memoGen[s] == b.gen {
			continue
		}
		why, err := b.wouldFail(b.sigRep[s], r, typ)
		if err != nil || why == reasonNone {
			return false, err
		}
		b.memo[s], b.memoGen[s] = why, b.gen
	}
	for _, s := range sigs {
		if b.sigLeft[s] > 0 {
			dropped[b.memo[s]] += b.sigLeft[s]
			b.swept[s] = b.memo[s]
		}
	}
	b.sweeps++
	return true, nil
}
