package queue

import (
	"context"
	"sync"
	"testing"
	"time"
)

// The bucket is opened by the first episode against a capped endpoint while
// the refresher and the idle-slot expiry already run: they must read it
// under the lock that opens it (the race detector failed CI on this once).
func TestLeaserBucketOpenedWhileRefreshing(t *testing.T) {
	ts := startTestServer(t)
	_, js := connect(t, ts.url())
	l := newLeaser(js, "w1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	acquired := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(acquired)
		key, err := l.acquire(ctx, leaseName("ep"), 2)
		if err != nil {
			t.Error(err)
			return
		}
		l.release(leaseName("ep"), key)
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-acquired:
				return
			default:
			}
			l.giveBack("ep-none.0") // reads the bucket; holds nothing
			time.Sleep(100 * time.Microsecond)
		}
	}()
	wg.Wait()
	if l.opened() == nil {
		t.Fatal("acquire did not open the lease bucket")
	}
	l.expire(true)
	if n := len(l.held); n != 0 {
		t.Fatalf("%d slots still held after expire(all)", n)
	}
}
