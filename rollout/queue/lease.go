package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// leaser holds per-endpoint concurrency leases shared by every worker: an
// endpoint with cap N has N slot keys "<lease>.<i>" in the ANTIDRIFT_LEASES
// bucket; a worker runs an episode against the endpoint only while it has
// created one of them. Held keys are refreshed; a killed worker's keys
// expire with the bucket's TTL, so its slots come back.
type leaser struct {
	js     jetstream.JetStream
	holder string

	bmu sync.Mutex
	kv  jetstream.KeyValue // under bmu: read it through opened

	mu   sync.Mutex
	held map[string]uint64 // key -> revision
	// idle holds slots this worker holds but does not use right now, per
	// lease name, with when each fell idle: the next episode against the
	// endpoint takes one without a round trip; slots idle for longer than
	// leaseIdle go back to the bucket.
	idle map[string][]idleSlot
	// next is where the next probe of a lease starts: after the last slot
	// won, so that a worker fills a run of slots in one probe each.
	next map[string]int
}

type idleSlot struct {
	key   string
	since time.Time
}

// leaseIdle is how long a worker keeps a slot it does not use.
const leaseIdle = time.Second

func newLeaser(js jetstream.JetStream, holder string) *leaser {
	return &leaser{js: js, holder: holder, held: map[string]uint64{}, idle: map[string][]idleSlot{}, next: map[string]int{}}
}

// leaseName is the bucket-key prefix of an endpoint's cap.
func leaseName(name string) string {
	h := sha256.Sum256([]byte(name))
	return "ep-" + hex.EncodeToString(h[:6])
}

func (l *leaser) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	l.bmu.Lock()
	defer l.bmu.Unlock()
	if l.kv != nil {
		return l.kv, nil
	}
	kv, err := l.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: leaseBucket, Description: "antidrift per-endpoint concurrency leases",
		TTL: leaseTTL, History: 1, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: lease bucket: %w", err)
	}
	l.kv = kv
	return kv, nil
}

// opened is the bucket if one is open yet, else nil; it never creates one.
func (l *leaser) opened() jetstream.KeyValue {
	l.bmu.Lock()
	defer l.bmu.Unlock()
	return l.kv
}

// acquire blocks until it holds one of the cap slots of lease name, and
// returns the slot's key.
func (l *leaser) acquire(ctx context.Context, name string, cap int) (string, error) {
	if cap < 1 {
		cap = 1
	}
	l.mu.Lock()
	if n := len(l.idle[name]); n > 0 {
		key := l.idle[name][n-1].key
		l.idle[name] = l.idle[name][:n-1]
		l.mu.Unlock()
		return key, nil
	}
	l.mu.Unlock()
	backoff := 5 * time.Millisecond
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		kv, err := l.bucket(ctx)
		if err == nil {
			l.mu.Lock()
			start, ok := l.next[name]
			if !ok {
				start = rand.IntN(cap)
			}
			l.next[name] = start + 1 // concurrent acquires probe different slots
			l.mu.Unlock()
			for i := 0; i < min(cap, 64); i++ {
				slot := (start + i) % cap
				key := fmt.Sprintf("%s.%d", name, slot)
				rev, cerr := kv.Create(ctx, key, []byte(l.holder))
				if cerr == nil {
					l.mu.Lock()
					l.held[key] = rev
					if i > 0 {
						l.next[name] = slot + 1
					}
					l.mu.Unlock()
					return key, nil
				}
				if !errors.Is(cerr, jetstream.ErrKeyExists) {
					break // the server is away: wait and try again
				}
			}
		}
		l.mu.Lock()
		l.next[name] = rand.IntN(cap) // full here: look elsewhere next time
		l.mu.Unlock()
		sleep(ctx, backoff/2+time.Duration(rand.Int64N(int64(backoff))))
		backoff = min(backoff*2, 200*time.Millisecond)
	}
}

// release puts a slot aside for the next episode against the same
// endpoint; expire gives it back to the bucket after leaseIdle.
func (l *leaser) release(name, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.held[key]; ok {
		l.idle[name] = append(l.idle[name], idleSlot{key, time.Now()})
	}
}

// expire gives back the slots idle for longer than leaseIdle (all with
// all set, when the worker stops).
func (l *leaser) expire(all bool) {
	l.mu.Lock()
	var drop []string
	for name, slots := range l.idle {
		keep := slots[:0]
		for _, s := range slots {
			if all || time.Since(s.since) > leaseIdle {
				drop = append(drop, s.key)
			} else {
				keep = append(keep, s)
			}
		}
		l.idle[name] = keep
	}
	l.mu.Unlock()
	for _, key := range drop {
		l.giveBack(key)
	}
}

// giveBack deletes a held slot from the bucket.
func (l *leaser) giveBack(key string) {
	l.mu.Lock()
	rev, ok := l.held[key]
	delete(l.held, key)
	l.mu.Unlock()
	kv := l.opened()
	if !ok || kv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = kv.Delete(ctx, key, jetstream.LastRevision(rev)) // a refresh in flight deletes it instead
}

// refresh keeps the held slots alive until ctx ends.
func (l *leaser) refresh(ctx context.Context) {
	t := time.NewTicker(leaseTTL / 3)
	defer t.Stop()
	e := time.NewTicker(leaseIdle / 2)
	defer e.Stop()
	defer l.expire(true)
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.C:
			l.expire(false)
			continue
		case <-t.C:
		}
		l.mu.Lock()
		snap := make(map[string]uint64, len(l.held))
		for k, v := range l.held {
			snap[k] = v
		}
		l.mu.Unlock()
		kv := l.opened()
		if kv == nil {
			continue
		}
		for key, rev := range snap {
			nrev, err := kv.Update(ctx, key, []byte(l.holder), rev)
			l.mu.Lock()
			_, still := l.held[key]
			if still && err == nil {
				l.held[key] = nrev
			}
			l.mu.Unlock()
			if !still && err == nil {
				_ = kv.Delete(ctx, key, jetstream.LastRevision(nrev))
			}
		}
	}
}
