package openai

import (
	"context"
	"sync"
)

// DefaultGrowAfter is the number of consecutive successful requests after
// which a Limiter raises its limit by one.
const DefaultGrowAfter = 8

// Limiter bounds the number of HTTP requests in flight and adapts the bound
// to the server's back-pressure with additive increase and multiplicative
// decrease (the scheme TCP uses for the same problem): the limit starts at
// the maximum, halves (down to 1) when the server answers 429, and grows back
// by one after a run of successes.
//
// A burst of 429s answering requests that were all sent under the old limit
// halves the limit once, not once per answer: after a decrease, further 429s
// are ignored until the requests in flight at that moment have been released.
// Without this, 256 simultaneous 429s would collapse the limit to 1.
//
// A Limiter is safe for concurrent use and may be shared by several clients
// that talk to the same server.
type Limiter struct {
	mu        sync.Mutex
	max       int
	limit     int
	inFlight  int
	growAfter int
	successes int // consecutive successes since the last change of limit
	drain     int // releases to wait for before another decrease counts
	wake      chan struct{}
}

// NewLimiter returns a limiter that admits at most max requests at a time
// (at least 1) and grows its limit by one after growAfter consecutive
// successes (DefaultGrowAfter when growAfter <= 0).
func NewLimiter(max, growAfter int) *Limiter {
	if max < 1 {
		max = 1
	}
	if growAfter <= 0 {
		growAfter = DefaultGrowAfter
	}
	return &Limiter{max: max, limit: max, growAfter: growAfter, wake: make(chan struct{})}
}

// Acquire blocks until a request may be sent or ctx is done. Every
// successful Acquire must be paired with one Release.
func (l *Limiter) Acquire(ctx context.Context) error {
	for {
		l.mu.Lock()
		if l.inFlight < l.limit {
			l.inFlight++
			l.mu.Unlock()
			return nil
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}

// Release returns the slot taken by Acquire. Call Succeeded or Throttled
// before it to report how the request went; a request that failed for any
// other reason neither grows nor shrinks the limit.
func (l *Limiter) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight > 0 {
		l.inFlight--
	}
	if l.drain > 0 {
		l.drain--
	}
	l.broadcast()
}

// Succeeded reports a request the server answered normally.
func (l *Limiter) Succeeded() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.successes++
	if l.successes >= l.growAfter && l.limit < l.max {
		l.limit++
		l.successes = 0
		l.broadcast()
	}
}

// Throttled reports a 429: the server wants fewer concurrent requests.
func (l *Limiter) Throttled() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.successes = 0
	if l.drain > 0 {
		return // answer to a request sent before the last decrease
	}
	l.limit = max(1, l.limit/2)
	l.drain = l.inFlight
}

// Limit is the current number of requests admitted at a time.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// Max is the limit the limiter started at and grows back to.
func (l *Limiter) Max() int { return l.max }

// InFlight is the number of requests currently admitted.
func (l *Limiter) InFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inFlight
}

// broadcast wakes every waiting Acquire; the caller holds l.mu.
func (l *Limiter) broadcast() {
	close(l.wake)
	l.wake = make(chan struct{})
}
