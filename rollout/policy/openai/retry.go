package openai

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// backoff is the wait before retry number n (0 for the first retry):
// exponential from base, capped at limit, with "equal jitter" — half fixed,
// half random — so that clients that failed together do not retry together
// yet never retry immediately.
func backoff(n int, base, limit time.Duration) time.Duration {
	d := limit
	if n < 62 {
		if e := base << n; e > 0 && e < limit {
			d = e
		}
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// retryAfter reads how long the server asked us to wait: OpenAI's
// retry-after-ms, then Retry-After as seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, ok := parseNonNegative(v); ok {
			return seconds(ms / 1000), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, ok := parseNonNegative(v); ok {
		return seconds(s), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func parseNonNegative(v string) (float64, bool) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < 0 {
		return 0, false
	}
	return f, true
}

// seconds converts without overflowing: a day is as good as forever here.
func seconds(s float64) time.Duration {
	return time.Duration(min(s, 86400) * float64(time.Second))
}

// sleepCtx waits for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
