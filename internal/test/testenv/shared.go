package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
)

// Shared is a set of clusters that several tests of a package share, to save the API server
// starts that CI's time goes to: started by the first test that asks for it (so that a `-run`
// of other tests starts nothing), stopped by RunShared when the package's tests end. Tests that
// share clusters must not interfere: each uses its own namespaces and object names.
type Shared struct {
	clusters []ClusterOptions
	setup    func(ctx context.Context, env *Env) error

	once sync.Once
	mu   sync.Mutex // guards env and stopped
	env  *Env
	err  error
	done bool // Stop ran: a later start is refused
}

// NewShared describes shared clusters; setup, when not nil, runs once after they start (e.g.
// to record a cluster identity every sharing test expects).
func NewShared(setup func(ctx context.Context, env *Env) error, clusters ...ClusterOptions) *Shared {
	return &Shared{clusters: clusters, setup: setup}
}

// Env returns the shared clusters, starting them on the first call; it fails tb when they
// cannot start (and every later caller with the same error). When tb fails, the end of the
// clusters' logs is written to it.
func (s *Shared) Env(tb testing.TB) *Env {
	tb.Helper()
	RequireLong(tb, "starts real API servers")
	s.once.Do(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.done {
			s.err = errors.New("testenv: shared clusters asked for after they were stopped")
			return
		}
		// Not tb's context: the clusters outlive the test that starts them.
		ctx := context.Background()
		env, err := Start(ctx, s.clusters...)
		if err == nil && s.setup != nil {
			if err = s.setup(ctx, env); err != nil {
				err = errors.Join(fmt.Errorf("testenv: setting up shared clusters: %w", err), env.Stop())
			}
		}
		if err != nil {
			s.err = err
			return
		}
		s.env = env
	})
	if s.err != nil {
		tb.Fatalf("starting shared test clusters: %v", s.err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			s.env.logTails(tb)
		}
	})
	return s.env
}

// Stop stops the shared clusters if they started. It is safe to call more than once.
func (s *Shared) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if s.env == nil {
		return nil
	}
	return s.env.Stop()
}

// RunShared runs a package's tests and then stops its shared clusters; a package's TestMain
// calls os.Exit(testenv.RunShared(m, shared...)). A failed stop (a process left behind) fails
// the run.
func RunShared(m *testing.M, shared ...*Shared) int {
	code := m.Run()
	for _, s := range shared {
		if err := s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping shared test clusters:", err)
			code = 1
		}
	}
	return code
}
