package queue

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

func TestQueueRunEqualsLocalRun(t *testing.T) {
	tests := []struct {
		name    string
		workers int
	}{{"one worker", 1}, {"three workers", 3}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp := spec{Policy: "sim:base", Rollouts: 3, Seed: 7, Conc: 4}
			want := sp.local(t)
			ts := startTestServer(t)
			startWorkers(t, ts.url(), tc.workers, 4, nil)
			nc, js := connect(t, ts.url())
			ss := testSuite(t)
			dir := filepath.Join(t.TempDir(), "run")
			seen := 0
			cfg := sp.config(t, ss)
			cfg.OnRecord = func(*trajectory.Record) { seen++ }
			c := &Coordinator{NC: nc, JS: js, Config: cfg, Folder: sp.open(t, dir, ss), AckWait: 2 * time.Second}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			sum, err := c.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Ran != len(want) || sum.InfraErrors != 0 || seen != len(want) {
				t.Fatalf("summary %+v, %d records seen, want %d", sum, seen, len(want))
			}
			sameRecords(t, folderRecords(t, dir, len(want)), want)
			// The finished run's streams are gone.
			if _, err := js.Stream(ctx, workStream("qtest")); err == nil {
				t.Fatal("the work stream outlived the finished run")
			}
			// Resuming a finished run publishes nothing and runs nothing.
			c2 := &Coordinator{NC: nc, JS: js, Config: cfg, Folder: sp.open(t, dir, ss)}
			sum, err = c2.Run(ctx)
			if err != nil || sum.Skipped != len(want) || sum.Ran != 0 {
				t.Fatalf("resume: %+v, %v", sum, err)
			}
		})
	}
}

func TestConnectUnreachableFailsFast(t *testing.T) {
	start := time.Now()
	_, _, err := Connect(context.Background(), "nats://user:secret@127.0.0.1:1", "test")
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("took %s", time.Since(start))
	}
	if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "queue serve") {
		t.Fatalf("message %q: leaks the password or gives no way out", err)
	}
}
