package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/antidrift/antidrift/internal/extsort"

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
// the record passed to fn is overwritten later). Memory is bounded:
// 16 bytes a record up to 512 Ki, sorted in a temporary file past that
// (balancedOrder).
func (r *Records) EachBalanced(seed int64, class func(rec *trajectory.Record) bool, fn func(rec *trajectory.Record) error) error {
	o := balancedOrder{key: func(i, _ int) [32]byte { return recordKey(seed, r.ix.TrajID(i)) }}
	defer o.close()
	err := r.ix.Each(func(i int, rec *trajectory.Record) error {
		return o.add(class(rec), i, 0, recordKey(seed, rec.TrajID))
	})
	if err == nil {
		err = o.build()
	}
	if err != nil {
		return err
	}
	var q orderQueue
	return r.ix.EachAtFunc(o.len(), q.position(&o), store.DecodeRecord,
		func(_ int, rec *trajectory.Record) error {
			q.pop()
			return fn(rec)
		})
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
// A record is read once per row in the second pass. Memory is a bit a
// record and, like EachBalanced's, 16 bytes a row up to 512 Ki rows.
func (r *Records) EachBalancedUnits(seed int64, units func(rec *trajectory.Record) []Unit, fn func(rec *trajectory.Record, u Unit, first bool) error) error {
	o := balancedOrder{key: func(i, turn int) [32]byte { return unitKey(seed, r.ix.TrajID(i), turn) }}
	defer o.close()
	err := r.ix.Each(func(i int, rec *trajectory.Record) error {
		for _, u := range units(rec) {
			if err := o.add(u.Class, i, u.Turn, unitKey(seed, rec.TrajID, u.Turn)); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = o.build()
	}
	if err != nil {
		return err
	}
	seen := make([]uint64, (r.Len()+63)/64) // a bit a record: a row of it came
	var q orderQueue
	return r.ix.EachAtFunc(o.len(), q.position(&o), store.DecodeRecord,
		func(_ int, rec *trajectory.Record) error {
			e := q.pop()
			w, bit := e.i/64, uint64(1)<<(e.i%64)
			first := seen[w]&bit == 0
			seen[w] |= bit
			return fn(rec, Unit{Turn: e.turn(), Class: e.class()}, first)
		})
}

// orderQueue passes the rows of an order from the reader's positions
// (asked for once each, in order, a window ahead of the records given to
// fn) to fn.
type orderQueue struct {
	rows []orderEntry
	head int
	at   int // the next position to be asked for
}

// position gives the record position of the k-th row of o, keeping the
// row for pop.
func (q *orderQueue) position(o *balancedOrder) func(k int) int {
	return func(k int) int {
		if k != q.at {
			panic(fmt.Sprintf("dataset: a seeded order asked for row %d after %d", k, q.at-1))
		}
		q.at++
		e := o.next()
		if q.head > 0 && q.head == len(q.rows) {
			q.rows, q.head = q.rows[:0], 0
		}
		q.rows = append(q.rows, *e)
		return int(e.i)
	}
}

// pop is the row whose record fn is given now.
func (q *orderQueue) pop() orderEntry {
	e := q.rows[q.head]
	q.head++
	return e
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
// its record's position, and its turn plus one (a caller's -1 marks a
// record's one row without a turn) and class (the top bit).
type orderEntry struct {
	prefix    uint64
	i         uint32
	turnClass uint32
}

const classBit = 1 << 31

func (e *orderEntry) turn() int   { return int(e.turnClass&^classBit) - 1 }
func (e *orderEntry) class() bool { return e.turnClass&classBit != 0 }

var orderCodec = extsort.Codec[orderEntry]{
	Size: 16,
	Put: func(b []byte, e *orderEntry) {
		binary.LittleEndian.PutUint64(b, e.prefix)
		binary.LittleEndian.PutUint32(b[8:], e.i)
		binary.LittleEndian.PutUint32(b[12:], e.turnClass)
	},
	Get: func(b []byte, e *orderEntry) {
		e.prefix = binary.LittleEndian.Uint64(b)
		e.i = binary.LittleEndian.Uint32(b[8:])
		e.turnClass = binary.LittleEndian.Uint32(b[12:])
	},
}

// orderHeld is how many rows a balanced order sorts in memory (16 bytes
// each: 8 MiB); past it they are sorted in runs in a temporary file, so
// that the order of any number of rows stays within a bound. A variable
// so that tests force the file.
var orderHeld = 512 << 10

// balancedOrder is the order of EachBalanced and EachBalancedUnits: the
// rows sorted by class then key (extsort), and the two classes merged by
// place ((k + 1/2)/n), then key, then class, as they are read.
type balancedOrder struct {
	key    func(i, turn int) [32]byte // a row's whole key
	sorter *extsort.Sorter[orderEntry]
	n      [2]int // rows of each class
	rows   *extsort.List[orderEntry]

	// the merge: the next row of each class, and how many were taken
	c    [2]*extsort.Cursor[orderEntry]
	head [2]*orderEntry
	k    [2]int
}

func (o *balancedOrder) init() {
	o.sorter = extsort.New(orderCodec, func(a, b *orderEntry) int {
		if a.class() != b.class() {
			if b.class() {
				return -1
			}
			return 1
		}
		return o.compare(a, b)
	}, orderHeld, "dataset: a seeded order")
}

// add places a row of record i and turn, whose key is key, in a class.
func (o *balancedOrder) add(class bool, i, turn int, key [32]byte) error {
	if o.sorter == nil {
		o.init()
	}
	if i > math.MaxUint32 || turn < -1 || turn >= classBit-1 {
		return fmt.Errorf("dataset: a seeded order of a record past %d, or a turn outside [-1, %d)", uint32(math.MaxUint32), classBit-1)
	}
	e := orderEntry{prefix: binary.BigEndian.Uint64(key[:8]), i: uint32(i), turnClass: uint32(turn + 1)}
	c := 0
	if class {
		e.turnClass |= classBit
		c = 1
	}
	o.n[c]++
	return o.sorter.Add(e)
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

// build sorts the rows; next then gives them in order.
func (o *balancedOrder) build() error {
	if o.sorter == nil {
		o.init()
	}
	rows, err := o.sorter.Sorted()
	if err != nil {
		return err
	}
	o.rows = rows
	o.c[0], o.c[1] = rows.Cursor(0, o.n[0]), rows.Cursor(o.n[0], o.n[0]+o.n[1])
	o.head[0], o.head[1] = o.c[0].Next(), o.c[1].Next()
	return nil
}

// close removes the order's file, if it has one.
func (o *balancedOrder) close() {
	if o.rows != nil {
		o.rows.Close()
	} else if o.sorter != nil {
		o.sorter.Discard()
	}
}

func (o *balancedOrder) len() int { return o.n[0] + o.n[1] }

// next is the next row of the order (after the last: nil). Its value is
// a copy, valid after later calls.
func (o *balancedOrder) next() *orderEntry {
	h0, h1 := o.head[0], o.head[1]
	var c int
	switch {
	case h0 == nil && h1 == nil:
		return nil
	case h0 == nil:
		c = 1
	case h1 == nil:
		c = 0
	default:
		at0 := (float64(o.k[0]) + 0.5) / float64(o.n[0])
		at1 := (float64(o.k[1]) + 0.5) / float64(o.n[1])
		if at1 < at0 || at1 == at0 && o.compare(h1, h0) < 0 {
			c = 1
		}
	}
	e := *o.head[c]
	o.k[c]++
	o.head[c] = o.c[c].Next()
	return &e
}
