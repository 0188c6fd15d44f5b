package queue

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

func TestAuthFromEnv(t *testing.T) {
	t.Setenv("Q_TOKEN", " s3cret-token ")
	t.Setenv("Q_USER", "alice:pa55:word")
	t.Setenv("Q_BAD", ":nopass")
	t.Setenv("Q_EMPTY", "")
	cases := []struct {
		name string
		want Auth
		err  string
	}{
		{"", Auth{}, ""},
		{"Q_TOKEN", Auth{Token: "s3cret-token"}, ""},
		{"Q_USER", Auth{User: "alice", Password: "pa55:word"}, ""},
		{"Q_BAD", Auth{}, "empty part"},
		{"Q_EMPTY", Auth{}, "unset or empty"},
		{"Q_MISSING", Auth{}, "unset or empty"},
	}
	for _, tc := range cases {
		got, err := AuthFromEnv(tc.name)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
		for _, secretText := range []string{"s3cret", "pa55"} {
			if strings.Contains(got.String(), secretText) {
				t.Errorf("%s: String shows the credential: %s", tc.name, got)
			}
		}
	}
}

func TestOpenToOthers(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:4222": false, "localhost:4222": false, "[::1]:4222": false,
		"0.0.0.0:4222": true, ":4222": true, "10.0.0.7:4222": true, "nats.internal:4222": true,
	} {
		if got := OpenToOthers(addr); got != want {
			t.Errorf("OpenToOthers(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestAuthRoundTrip: a server started with a token or a user and password
// admits clients presenting it, refuses the others with a message that
// names --auth-env and never the credential, and a queued run goes through
// it end to end.
func TestAuthRoundTrip(t *testing.T) {
	for _, auth := range []Auth{{Token: "tok-3f9a"}, {User: "alice", Password: "pa55-77"}} {
		t.Run(auth.String(), func(t *testing.T) {
			s, err := StartServer(ServerOptions{Addr: "127.0.0.1:0", StoreDir: t.TempDir(), Auth: auth})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Stop)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for _, wrong := range []Auth{{}, {Token: "nope"}, {User: "alice", Password: "nope"}} {
				_, _, err := ConnectAuth(ctx, s.URL(), "test", wrong)
				if err == nil {
					t.Fatalf("connected with %s", wrong)
				}
				if !strings.Contains(err.Error(), "--auth-env") || strings.Contains(err.Error(), "nope") {
					t.Errorf("message %q", err)
				}
			}
			nc, js, err := ConnectAuth(ctx, s.URL(), "coordinator", auth)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			sp := spec{Policy: "sim:base", Rollouts: 1, Seed: 3, Conc: 4}
			ss := testSuite(t)[:6]
			cfg := sp.config(t, ss)
			dir := filepath.Join(t.TempDir(), "run")
			w := startAuthWorker(t, s.URL(), auth)
			defer w()
			n := 0
			cfg.OnRecord = func(*trajectory.Record) { n++ }
			c := &Coordinator{NC: nc, JS: js, Config: cfg, Folder: sp.open(t, dir, ss), AckWait: 2 * time.Second}
			sum, err := c.Run(ctx)
			if err != nil || sum.Ran != len(ss) || n != len(ss) {
				t.Fatalf("%+v, %v", sum, err)
			}
		})
	}
}

func startAuthWorker(t *testing.T, url string, auth Auth) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	nc, js, err := ConnectAuth(ctx, url, "worker", auth)
	if err != nil {
		t.Fatal(err)
	}
	w := &Worker{NC: nc, JS: js, Name: "w", Concurrency: 4, Version: testVersion, Log: testLog{t}}
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Serve(ctx) }()
	return func() { cancel(); <-done; nc.Close() }
}
