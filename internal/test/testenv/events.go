package testenv

import (
	"context"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ExpectEvent waits up to timeout for an Event regarding obj (by name, in its namespace) with
// reason, and returns it; it fails tb, listing the Events it saw, when none comes.
func ExpectEvent(tb testing.TB, c client.Reader, obj client.Object, reason string, timeout time.Duration) *eventsv1.Event {
	tb.Helper()
	var seen []string
	var found *eventsv1.Event
	err := poll(tb.Context(), timeout, func(ctx context.Context) (bool, error) {
		list := &eventsv1.EventList{}
		if err := c.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
			return false, nil //nolint:nilerr // a failed list is retried until timeout
		}
		seen = seen[:0]
		for i, e := range list.Items {
			seen = append(seen, e.Reason+": "+e.Note)
			if e.Regarding.Name == obj.GetName() && e.Reason == reason {
				found = &list.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		tb.Fatalf("no %s event on %s/%s: %v (events: %s)", reason, obj.GetNamespace(), obj.GetName(), err, strings.Join(seen, "; "))
	}
	return found
}
