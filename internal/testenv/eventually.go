package testenv

import (
	"context"
	"testing"
	"time"
)

// Eventually polls cond every 200 ms until it holds, and fails the test, naming what it waited
// for, when it does not within timeout (or when the test's context ends).
func Eventually(tb testing.TB, what string, timeout time.Duration, cond func(ctx context.Context) bool) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond(ctx) {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("waiting %s for %s: %v", timeout, what, ctx.Err())
		case <-tick.C:
		}
	}
}
