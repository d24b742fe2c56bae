package vnode

import (
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// answers records when the provider cluster's API server last answered one of a virtual node's
// requests (its reflectors' reads and writes). A probe that times out while the server answers
// those is a sign of a busy server, not of an unreachable one: at 10,000 pods the provider's
// API server, on 2 cores, answered the probe late three times in a row while it served the
// reflectors, and the node turned NotReady, holding every pod status back.
type answers struct {
	last atomic.Int64 // Unix nanoseconds of the last answer; 0 before the first
}

// wrap returns a copy of cfg whose requests record their answers here.
func (a *answers) wrap(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	inner := c.WrapTransport
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if inner != nil {
			rt = inner(rt)
		}
		return &answerRecorder{next: rt, answers: a}
	}
	return c
}

// since tells whether the API server answered after t.
func (a *answers) since(t time.Time) bool {
	return a != nil && a.last.Load() > t.UnixNano()
}

// answerRecorder is the round tripper that records answers: any response below 500 (a 404 or
// a 409 is an answer too; a 5xx may come from a proxy in front of a server that is away).
type answerRecorder struct {
	next    http.RoundTripper
	answers *answers
}

// RoundTrip sends the request and records its answer.
func (r *answerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil && resp.StatusCode < http.StatusInternalServerError {
		r.answers.last.Store(time.Now().UnixNano())
	}
	return resp, err //nolint:wrapcheck // a round tripper passes its transport's errors on as they are
}
