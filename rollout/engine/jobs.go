package engine

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Job is one planned episode of a run that is not an agent rollout (the
// selection tasks of antidrift select): its id and how to produce its
// record. Returning an error stops the run (a fatal endpoint error);
// infrastructure failures are records with status infra_error. refusal is
// the endpoint's error when the episode ended in one (else nil), for the
// gate Run applies too: a first wave refused alike before any model answer,
// or a streak of the same server error, stops the run.
type Job struct {
	TrajID string
	Do     func(ctx context.Context) (rec *trajectory.Record, refusal error, err error)
}

// RunJobs executes the jobs missing from the run folder with the same
// machinery as Run: a bounded number in flight, records appended to the
// shard's file as they finish, infrastructure errors to errors/ (retried
// on the next invocation), the first-wave refusal gate (an endpoint
// refusing the first jobs alike stops the run with none of them written),
// and an early stop on a fatal error or cancellation with everything
// finished on disk.
func RunJobs(ctx context.Context, run *store.Run, shard Shard, concurrency int, jobs []Job, onRecord func(*trajectory.Record)) (Summary, error) {
	return runJobs(ctx, run, shard, concurrency, jobs, onRecord, nil)
}

// runJobs is RunJobs with the warnings of Config.Warn (Run's episodes).
func runJobs(ctx context.Context, run *store.Run, shard Shard, concurrency int, jobs []Job, onRecord func(*trajectory.Record), warn func(string)) (Summary, error) {
	start := time.Now()
	if shard.N == 0 {
		shard = Shard{0, 1}
	}
	if concurrency <= 0 {
		concurrency = runtime.GOMAXPROCS(0)
	}
	sum := Summary{Planned: len(jobs), Statuses: map[string]int{}}
	var todo []Job
	for _, j := range jobs {
		if run.Done(j.TrajID) {
			sum.Skipped++
		} else {
			todo = append(todo, j)
		}
	}
	if len(todo) == 0 {
		sum.Elapsed = time.Since(start)
		return sum, nil
	}
	sk, err := openSink(run, shard, len(todo), &sum, onRecord, warn)
	if err != nil {
		return sum, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	feed := make(chan Job)
	var wg sync.WaitGroup
	for i := 0; i < concurrency && i < len(todo); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range feed {
				rec, refusal, err := j.Do(ctx)
				if err != nil {
					cancel(err)
					continue
				}
				if ctx.Err() != nil {
					continue // interrupted mid-episode: rerun later
				}
				if err := sk.put(rec, refusal); err != nil {
					cancel(err)
				}
			}
		}()
	}
loop:
	for _, j := range todo {
		select {
		case feed <- j:
		case <-ctx.Done():
			break loop
		}
	}
	close(feed)
	wg.Wait()
	werr := sk.close()
	sum.Elapsed = time.Since(start)
	if cause := context.Cause(ctx); cause != nil {
		return sum, cause
	}
	return sum, werr
}
