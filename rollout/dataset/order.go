package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// EachBalanced calls fn with every record in a seeded order that spreads
// the two classes of class (for KTO: the label) evenly through the file:
// each class is shuffled on its own (by SHA-256 of the seed and traj_id),
// and the k-th of a class's n records takes the place (k + 1/2)/n, so
// that a class with share p recurs every 1/p rows — in a window of 8 rows
// both classes appear whenever the smaller has at least an eighth of the
// records — and scenarios stay mixed within each class. Places that tie
// go by key, then the class false first. The records are read twice: once
// for their class, once in order (a window at a time, store.Index.EachAt;
// the record passed to fn is overwritten later). Memory is 20 bytes a
// record (balancedOrder).
func (r *Records) EachBalanced(seed int64, class func(rec *trajectory.Record) bool, fn func(rec *trajectory.Record) error) error {
	o := balancedOrder{key: func(i, _ int) [32]byte { return recordKey(seed, r.ix.TrajID(i)) }}
	o.grow(r.Len())
	err := r.ix.Each(func(i int, rec *trajectory.Record) error {
		return o.add(class(rec), i, 0, recordKey(seed, rec.TrajID))
	})
	if err != nil {
		return err
	}
	o.build()
	return r.ix.EachAtFunc(o.len(), func(k int) int { return int(o.at(k).i) }, store.DecodeRecord,
		func(_ int, rec *trajectory.Record) error { return fn(rec) })
}

// A Unit is one row a record gives a per-turn table: the message index of
// its turn and its class (for KTO: the label).
type Unit struct {
	Turn  int
	Class bool
}

// EachBalancedUnits is EachBalanced over rows rather than records: units
// lists the rows of a record, and fn is called once per row, with the
// record, the row's unit and whether it is the first of the record's rows
// in the order (so that a caller counts a record once without a set of
// the records seen), in a seeded order (SHA-256 of the seed,
// traj_id and turn) that spreads the two classes evenly through the file,
// so that the rows of one trajectory are scattered among other scenarios'.
// A record is read once per row in the second pass. Memory is 20 bytes a
// row and a bit a record.
func (r *Records) EachBalancedUnits(seed int64, units func(rec *trajectory.Record) []Unit, fn func(rec *trajectory.Record, u Unit, first bool) error) error {
	o := balancedOrder{key: func(i, turn int) [32]byte { return unitKey(seed, r.ix.TrajID(i), turn) }}
	o.grow(r.Len()) // a row a record at least, for most records
	err := r.ix.Each(func(i int, rec *trajectory.Record) error {
		for _, u := range units(rec) {
			if err := o.add(u.Class, i, u.Turn, unitKey(seed, rec.TrajID, u.Turn)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	o.build()
	next := 0
	seen := make([]uint64, (r.Len()+63)/64) // a bit a record: a row of it came
	return r.ix.EachAtFunc(o.len(), func(k int) int { return int(o.at(k).i) }, store.DecodeRecord,
		func(_ int, rec *trajectory.Record) error {
			e := o.at(next)
			next++
			w, bit := e.i/64, uint64(1)<<(e.i%64)
			first := seen[w]&bit == 0
			seen[w] |= bit
			return fn(rec, Unit{Turn: e.turn(), Class: e.class()}, first)
		})
}

// recordKey and unitKey are a record's and a row's place in a seeded
// shuffle: SHA-256 of the seed, traj_id and turn, as text.
func recordKey(seed int64, trajID string) [32]byte {
	return sha256.Sum256([]byte(strconv.FormatInt(seed, 10) + "\x00" + trajID))
}

func unitKey(seed int64, trajID string, turn int) [32]byte {
	return sha256.Sum256([]byte(strconv.FormatInt(seed, 10) + "\x00" + trajID + "\x00" + strconv.Itoa(turn)))
}

// orderEntry is a row's place in a balanced order: the first eight bytes
// of its key (big-endian, so that they compare as the key does; the whole
// key is computed again for the rare rows whose first eight bytes tie),
// its record's position, and its turn and class (the top bit).
type orderEntry struct {
	prefix    uint64
	i         uint32
	turnClass uint32
}

const classBit = 1 << 31

func (e *orderEntry) turn() int   { return int(e.turnClass &^ classBit) }
func (e *orderEntry) class() bool { return e.turnClass&classBit != 0 }

// balancedOrder is the order of EachBalanced and EachBalancedUnits: each
// class sorted by key, the two merged by place ((k + 1/2)/n), then key,
// then class. It holds 20 bytes a row (16 in rows, 4 in order) rather
// than the keys, so that the order of a run of millions of records fits
// in a command's memory bound.
type balancedOrder struct {
	key   func(i, turn int) [32]byte // a row's whole key
	rows  []orderEntry
	order []uint32 // indexes in rows, in order
}

// grow makes room for n more rows (a record's rows, when known).
func (o *balancedOrder) grow(n int) { o.rows = slices.Grow(o.rows, n) }

// add places a row of record i and turn, whose key is key, in a class.
func (o *balancedOrder) add(class bool, i, turn int, key [32]byte) error {
	if i > math.MaxUint32 || turn < 0 || turn >= classBit || len(o.rows) >= math.MaxUint32 {
		return fmt.Errorf("dataset: a seeded order of more than %d rows, or a record past %d, or a turn past %d", uint32(math.MaxUint32), uint32(math.MaxUint32), classBit-1)
	}
	e := orderEntry{prefix: binary.BigEndian.Uint64(key[:8]), i: uint32(i), turnClass: uint32(turn)}
	if class {
		e.turnClass |= classBit
	}
	o.rows = append(o.rows, e)
	return nil
}

// compare orders two rows by key.
func (o *balancedOrder) compare(a, b *orderEntry) int {
	if a.prefix != b.prefix {
		if a.prefix < b.prefix {
			return -1
		}
		return 1
	}
	ka, kb := o.key(int(a.i), a.turn()), o.key(int(b.i), b.turn())
	return bytes.Compare(ka[:], kb[:])
}

// build sorts the rows by class, then key, and merges the two classes.
func (o *balancedOrder) build() {
	slices.SortFunc(o.rows, func(a, b orderEntry) int {
		if a.class() != b.class() {
			if b.class() {
				return -1
			}
			return 1
		}
		return o.compare(&a, &b)
	})
	n0 := 0
	for n0 < len(o.rows) && !o.rows[n0].class() {
		n0++
	}
	c0, c1 := o.rows[:n0], o.rows[n0:]
	f0, f1 := float64(len(c0)), float64(len(c1))
	o.order = make([]uint32, 0, len(o.rows))
	k0, k1 := 0, 0
	for k0 < len(c0) || k1 < len(c1) {
		one := k0 == len(c0)
		if !one && k1 < len(c1) {
			at0, at1 := (float64(k0)+0.5)/f0, (float64(k1)+0.5)/f1
			one = at1 < at0 || at1 == at0 && o.compare(&c1[k1], &c0[k0]) < 0
		}
		if one {
			o.order = append(o.order, uint32(n0+k1))
			k1++
		} else {
			o.order = append(o.order, uint32(k0))
			k0++
		}
	}
}

func (o *balancedOrder) len() int { return len(o.order) }

// at is the k-th row of the order.
func (o *balancedOrder) at(k int) *orderEntry { return &o.rows[o.order[k]] }
