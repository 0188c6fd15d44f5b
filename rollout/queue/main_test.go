package queue

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/store"
)

// TestMain lets the failure tests run this test binary as a worker or a
// coordinator process, so that they can SIGKILL it.
func TestMain(m *testing.M) {
	leaseTTL = 2 * time.Second // a killed worker's slots come back quickly
	switch os.Getenv("QT_ROLE") {
	case "":
		os.Exit(m.Run())
	case "worker":
		os.Exit(roleWorker())
	case "coordinator":
		os.Exit(roleCoordinator())
	case "envcollect":
		os.Exit(roleEnvCollect())
	default:
		fmt.Fprintln(os.Stderr, "unknown QT_ROLE")
		os.Exit(2)
	}
}

// mainTB lets the helpers run outside a test: Fatal exits.
type mainTB struct{ testing.TB }

func (mainTB) Helper() {}
func (mainTB) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, args...)
	os.Exit(3)
}
func (mainTB) Fatalf(f string, args ...any) {
	fmt.Fprintf(os.Stderr, f+"\n", args...)
	os.Exit(3)
}

func envSpec() spec {
	r, _ := strconv.Atoi(os.Getenv("QT_ROLLOUTS"))
	c, _ := strconv.Atoi(os.Getenv("QT_CONC"))
	seed, _ := strconv.ParseInt(os.Getenv("QT_SEED"), 10, 64)
	return spec{Policy: os.Getenv("QT_POLICY"), BaseURL: os.Getenv("QT_SIM"), Rollouts: r, Seed: seed, Conc: c}
}

func roleWorker() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	nc, js, err := Connect(ctx, os.Getenv("QT_URL"), "test worker")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	c, _ := strconv.Atoi(os.Getenv("QT_WORKER_CONC"))
	w := &Worker{NC: nc, JS: js, Name: "proc-" + strconv.Itoa(os.Getpid()), Concurrency: c, Version: testVersion, Log: os.Stderr}
	_ = w.Serve(ctx)
	return 0
}

func roleCoordinator() int {
	t := mainTB{}
	sp := envSpec()
	ss := testSuite(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, js, err := Connect(ctx, os.Getenv("QT_URL"), "test coordinator")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	aw, _ := time.ParseDuration(os.Getenv("QT_ACKWAIT"))
	c := &Coordinator{NC: nc, JS: js, Config: sp.config(t, ss), Folder: sp.open(t, os.Getenv("QT_DIR"), ss), AckWait: aw, MaxDeliver: 20, Log: os.Stderr}
	sum, err := c.Run(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if sum.InfraErrors > 0 {
		return 2
	}
	return 0
}

// roleEnvCollect is an env collect writer on QT_DIR until killed.
func roleEnvCollect() int {
	t := mainTB{}
	ss := envScenarios(t)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	nc, js, err := Connect(ctx, os.Getenv("QT_URL"), "test env collect")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	run, err := store.Open(os.Getenv("QT_DIR"), envManifest(ss), false)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer run.Close()
	aw, _ := time.ParseDuration(os.Getenv("QT_ACKWAIT"))
	c := &EnvCollector{NC: nc, JS: js, Folder: run, Scenarios: ss, Log: os.Stderr, AckWait: aw}
	if _, err := c.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
