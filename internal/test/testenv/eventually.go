package testenv

import (
	"context"
	"testing"
	"time"
)

// pollInterval is how often the Eventually helpers check.
const pollInterval = 100 * time.Millisecond

// Eventually polls cond every 100 ms until it holds, and fails the test, naming what it waited
// for, when it does not within timeout (or when the test's context ends).
func Eventually(tb testing.TB, what string, timeout time.Duration, cond func(ctx context.Context) bool) {
	tb.Helper()
	if err := poll(tb.Context(), timeout, func(ctx context.Context) (bool, error) { return cond(ctx), nil }); err != nil {
		tb.Fatalf("waiting %s for %s: %v", timeout, what, err)
	}
}

// EventuallyOK polls check every 100 ms until it returns no error, and fails the test with the
// last error when that does not happen within timeout.
func EventuallyOK(tb testing.TB, what string, timeout time.Duration, check func() error) {
	tb.Helper()
	var last error
	if err := poll(tb.Context(), timeout, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
	}); err != nil {
		tb.Fatalf("waiting %s for %s: %v (last: %v)", timeout, what, err, last)
	}
}

// Poll polls cond every 100 ms until it holds; an error from cond counts as not yet, and the
// last one is reported when cond does not hold within timeout.
func Poll(tb testing.TB, what string, timeout time.Duration, cond func(ctx context.Context) (bool, error)) {
	tb.Helper()
	var last error
	if err := poll(tb.Context(), timeout, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			last = err
		}
		return ok, nil
	}); err != nil {
		tb.Fatalf("waiting %s for %s: %v (last error: %v)", timeout, what, err, last)
	}
}

// poll checks cond at once and then every pollInterval until it holds, it errs, or timeout (or
// ctx) ends; each check gets the deadline's context.
func poll(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		ok, err := cond(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
