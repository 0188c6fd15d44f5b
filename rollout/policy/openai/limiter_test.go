package openai

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
)

func TestLimiterAIMD(t *testing.T) {
	ctx := context.Background()
	l := NewLimiter(8, 2)
	assert.Equal(t, 8, l.Limit())
	assert.Equal(t, 8, l.Max())

	// Eight requests in flight, all answered 429: one halving, not eight.
	for range 8 {
		require.NoError(t, l.Acquire(ctx))
	}
	for range 8 {
		l.Throttled()
		l.Release()
	}
	assert.Equal(t, 4, l.Limit(), "a burst of 429s halves once")
	assert.Equal(t, 0, l.InFlight())

	// Later 429s, each in its own window, keep halving down to 1.
	for _, want := range []int{2, 1, 1} {
		require.NoError(t, l.Acquire(ctx))
		l.Throttled()
		l.Release()
		assert.Equal(t, want, l.Limit())
	}

	// Successes grow the limit by one per run of growAfter.
	for _, want := range []int{1, 2, 2, 3} {
		require.NoError(t, l.Acquire(ctx))
		l.Succeeded()
		l.Release()
		assert.Equal(t, want, l.Limit())
	}
	// A 429 breaks the run.
	require.NoError(t, l.Acquire(ctx))
	l.Succeeded()
	l.Throttled()
	l.Release()
	assert.Equal(t, 1, l.Limit())
	for range 20 {
		l.Succeeded()
	}
	assert.Equal(t, 8, l.Limit(), "never beyond max")
}

func TestLimiterBlocksAtLimit(t *testing.T) {
	l := NewLimiter(2, 1)
	ctx := context.Background()
	require.NoError(t, l.Acquire(ctx))
	require.NoError(t, l.Acquire(ctx))

	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, l.Acquire(short), context.DeadlineExceeded)

	got := make(chan error, 1)
	go func() { got <- l.Acquire(ctx) }()
	l.Release()
	require.NoError(t, <-got)
	assert.Equal(t, 2, l.InFlight())

	// Lowering the limit below the requests in flight holds new ones back
	// until enough have finished.
	l.Throttled() // limit 1, two in flight
	go func() { got <- l.Acquire(ctx) }()
	l.Release()
	select {
	case <-got:
		t.Fatal("admitted while at the limit")
	case <-time.After(10 * time.Millisecond):
	}
	l.Release()
	require.NoError(t, <-got)
	l.Release()
	assert.Equal(t, 0, l.InFlight())
}

func TestLimiterDefaults(t *testing.T) {
	l := NewLimiter(0, 0)
	assert.Equal(t, 1, l.Max())
	assert.Equal(t, DefaultGrowAfter, l.growAfter)
}

// The server admits two requests at a time and answers 429 beyond; a client
// allowed eight must back off, still finish every request, and grow back
// once the pressure is gone.
func TestClientBacksOffOn429AndRecovers(t *testing.T) {
	const capacity, concurrency = 2, 8
	srv := fakeserver.Start(t, fakeserver.Options{
		Capacity: capacity,
		Handler: func(*fakeserver.Request) fakeserver.Reply {
			return fakeserver.Text("ok").Delayed(5 * time.Millisecond)
		},
	})
	lim := NewLimiter(concurrency, 2)
	c := newTestClient(t, srv, func(c *Config) {
		c.Limiter = lim
		c.MaxRetries = 100
	})

	var wg sync.WaitGroup
	errs := make(chan error, 4*concurrency)
	for range 4 * concurrency {
		wg.Go(func() {
			_, err := c.Complete(context.Background(), userRequest("x"))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	st := c.Stats()
	assert.Positive(t, st.RateLimited, "the server pushed back")
	assert.Equal(t, st.RateLimited, st.Retries, "every 429 was retried")
	assert.Less(t, st.Limit, concurrency, "the limit came down")
	assert.GreaterOrEqual(t, st.Limit, 1)
	assert.Equal(t, concurrency, st.MaxLimit)
	assert.LessOrEqual(t, srv.MaxInFlight(), capacity)

	// Sequential successes raise the limit back to the maximum.
	for i := 0; c.Stats().Limit < concurrency; i++ {
		require.Less(t, i, 2*concurrency*2, "limit did not recover")
		_, err := c.Complete(context.Background(), userRequest("x"))
		require.NoError(t, err)
	}
	assert.Equal(t, concurrency, c.Stats().Limit)
	assert.Equal(t, 0, c.Stats().InFlight)
}
