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
	kv  jetstream.KeyValue

	mu   sync.Mutex
	held map[string]uint64 // key -> revision
}

func newLeaser(js jetstream.JetStream, holder string) *leaser {
	return &leaser{js: js, holder: holder, held: map[string]uint64{}}
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

// acquire blocks until it holds one of the cap slots of lease name, and
// returns the slot's key.
func (l *leaser) acquire(ctx context.Context, name string, cap int) (string, error) {
	if cap < 1 {
		cap = 1
	}
	backoff := 5 * time.Millisecond
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		kv, err := l.bucket(ctx)
		if err == nil {
			start := rand.IntN(cap)
			for i := 0; i < min(cap, 64); i++ {
				key := fmt.Sprintf("%s.%d", name, (start+i)%cap)
				rev, cerr := kv.Create(ctx, key, []byte(l.holder))
				if cerr == nil {
					l.mu.Lock()
					l.held[key] = rev
					l.mu.Unlock()
					return key, nil
				}
				if !errors.Is(cerr, jetstream.ErrKeyExists) {
					break // the server is away: wait and try again
				}
			}
		}
		sleep(ctx, backoff/2+time.Duration(rand.Int64N(int64(backoff))))
		backoff = min(backoff*2, 200*time.Millisecond)
	}
}

// release gives a slot back.
func (l *leaser) release(key string) {
	l.mu.Lock()
	rev, ok := l.held[key]
	delete(l.held, key)
	kv := l.kv
	l.mu.Unlock()
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
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.mu.Lock()
		snap := make(map[string]uint64, len(l.held))
		for k, v := range l.held {
			snap[k] = v
		}
		kv := l.kv
		l.mu.Unlock()
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
