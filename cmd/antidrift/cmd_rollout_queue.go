package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/queue"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"
)

// queueFlags are rollout's flags for running through a NATS JetStream work
// queue (docs/queue.md).
type queueFlags struct {
	url        string
	authEnv    string
	ackWait    time.Duration
	maxDeliver int
}

func addQueueFlags(fl *pflag.FlagSet, q *queueFlags) {
	fl.StringVar(&q.url, "queue", "", "run through the NATS JetStream work queue at this URL (nats://HOST:PORT): workers (antidrift worker) run the episodes, this process plans and writes the run folder")
	fl.StringVar(&q.authEnv, "queue-auth-env", "", "with --queue: environment variable holding the NATS credential (a token, or USER:PASSWORD), as queue serve --auth-env; never written anywhere")
	fl.DurationVar(&q.ackWait, "ack-wait", queue.DefaultAckWait, "with --queue: how long a work item may go without a worker's progress ack before it is handed to another worker")
	fl.IntVar(&q.maxDeliver, "max-deliver", queue.DefaultMaxDeliver, "with --queue: deliveries of one work item before it is recorded as an infrastructure error (retried on resume)")
}

// queueRun is rollout's connection to the queue.
type queueRun struct {
	f  queueFlags
	nc *nats.Conn
	js jetstream.JetStream
}

// dialQueue connects when --queue is given (nil otherwise), failing fast
// with a clear message when the server cannot be reached.
func dialQueue(ctx context.Context, f queueFlags) (*queueRun, error) {
	if f.url == "" {
		return nil, nil
	}
	if f.ackWait < 100*time.Millisecond {
		return nil, fmt.Errorf("--ack-wait %s: must be at least 100ms", f.ackWait)
	}
	if f.maxDeliver < 1 {
		return nil, fmt.Errorf("--max-deliver %d: must be at least 1", f.maxDeliver)
	}
	auth, err := queue.AuthFromEnv(f.authEnv)
	if err != nil {
		return nil, fmt.Errorf("--queue-auth-env: %w", err)
	}
	nc, js, err := queue.ConnectAuth(ctx, f.url, "antidrift rollout", auth)
	if err != nil {
		return nil, fmt.Errorf("--queue: %w", err)
	}
	return &queueRun{f: f, nc: nc, js: js}, nil
}

func (q *queueRun) close() {
	if q != nil {
		q.nc.Close()
	}
}

func (q *queueRun) run(ctx context.Context, f rolloutFlags, cfg engine.Config, run *store.Run) (engine.Summary, error) {
	tp, err := openai.ParseTokenParam(f.endpoint.tokenParam)
	if err != nil {
		return engine.Summary{}, fmt.Errorf("--token-param: %w", err)
	}
	ready := f.endpoint.readyWait
	if ready == 0 {
		ready = -1 // the flag's 0 means "do not wait"
	}
	c := &queue.Coordinator{NC: q.nc, JS: q.js, Config: cfg, Folder: run,
		AckWait: q.f.ackWait, MaxDeliver: q.f.maxDeliver,
		RequestTimeout: f.endpoint.requestTimeout, MaxRetries: f.endpoint.maxRetries,
		TokenParam: tp, ReadyWait: ready, Log: os.Stderr}
	if oc, ok := cfg.Policy.(*openai.Client); ok {
		c.Learned = oc.Learned() // the pre-flight's token parameter and num_ctx, for the workers
	}
	fmt.Fprintf(os.Stderr, "antidrift: run %s: queueing its unfinished episodes on %s; workers run them (antidrift worker --queue URL)\n", run.Manifest.Run, secret.URL(q.f.url))
	return c.Run(ctx)
}
