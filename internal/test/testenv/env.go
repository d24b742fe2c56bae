package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Env is a set of running clusters sharing one temp folder.
type Env struct {
	// Dir is the folder every cluster's files live in; Stop removes it.
	Dir string
	// Clusters are the running clusters, in the order they were asked for.
	Clusters []*Cluster

	stopOnce sync.Once
	stopErr  error
}

// maxStarting is how many clusters Start brings up at once: on a 2-core machine, 16 API
// servers starting together (a 16-cluster sandbox) each missed envtest's start-up deadlines.
const maxStarting = 4

// Start brings up one cluster per options, in parallel (maxStarting at a time), under a new folder in the OS temp
// folder. On error it stops everything it started and removes the folder.
func Start(ctx context.Context, clusters ...ClusterOptions) (*Env, error) {
	if len(clusters) == 0 {
		return nil, errors.New("testenv: no cluster asked for")
	}
	seen := map[string]bool{}
	for _, o := range clusters {
		if o.Name == "" || o.Name != filepath.Base(o.Name) || seen[o.Name] {
			return nil, fmt.Errorf("testenv: cluster name %q is empty, not a plain name, or used twice", o.Name)
		}
		seen[o.Name] = true
	}
	binDir, err := BinDir()
	if err != nil {
		return nil, err
	}
	// envtest logs through controller-runtime's logger, which complains when nobody set one.
	// The first SetLogger wins: a caller that set its own logger keeps it.
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "liqo-testenv-")
	if err != nil {
		return nil, fmt.Errorf("testenv: creating temp folder: %w", err)
	}
	env := &Env{Dir: dir, Clusters: make([]*Cluster, len(clusters))}
	var testImages []string
	for _, o := range clusters {
		if (o.RealNode != nil || o.RealNodes > 0) && testImages == nil {
			if testImages, err = buildTestImages(ctx, filepath.Join(dir, "images")); err != nil {
				return nil, errors.Join(err, env.Stop())
			}
		}
	}
	errs := make([]error, len(clusters))
	var wg sync.WaitGroup
	starting := make(chan struct{}, maxStarting)
	for i, o := range clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			starting <- struct{}{}
			defer func() { <-starting }()
			env.Clusters[i], errs[i] = startCluster(ctx, binDir, filepath.Join(dir, o.Name), o, testImages)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	return env, nil
}

// New starts clusters for a test or benchmark and stops them when it ends, passed, failed or
// panicked. It fails tb when they cannot start; when the test bed is not built, the error says
// to run `make tools`.
func New(tb testing.TB, clusters ...ClusterOptions) *Env {
	tb.Helper()
	RequireLong(tb, "starts real API servers")
	env, err := Start(tb.Context(), clusters...)
	if err != nil {
		tb.Fatalf("starting test clusters: %v", err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			env.logTails(tb)
		}
		if err := env.Stop(); err != nil {
			tb.Errorf("stopping test clusters: %v", err)
		}
	})
	return env
}

// Cluster returns the cluster with the given name, or nil.
func (e *Env) Cluster(name string) *Cluster {
	for _, c := range e.Clusters {
		if c != nil && c.Name == name {
			return c
		}
	}
	return nil
}

// Stop ends every process of every cluster and removes the Env's folder. It is safe to call
// more than once.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		var wg sync.WaitGroup
		errs := make([]error, len(e.Clusters))
		for i, c := range e.Clusters {
			if c == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c.stop()
			}()
		}
		wg.Wait()
		if pids := ProcessesUsing(e.Dir); len(pids) > 0 {
			errs = append(errs, fmt.Errorf("testenv: processes still using %s after stop: %v", e.Dir, pids))
		}
		if err := os.RemoveAll(e.Dir); err != nil {
			errs = append(errs, fmt.Errorf("testenv: removing %s: %w", e.Dir, err))
		}
		e.stopErr = errors.Join(errs...)
	})
	return e.stopErr
}

// logTails writes the end of every cluster process's log to tb, to explain a failure.
func (e *Env) logTails(tb testing.TB) {
	tb.Helper()
	logs, _ := filepath.Glob(filepath.Join(e.Dir, "*", "logs", "*.log"))
	more, _ := filepath.Glob(filepath.Join(e.Dir, "*", "logs", "*", "*.log")) // real nodes but the first
	logs = append(logs, more...)
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if err != nil || len(data) == 0 {
			continue
		}
		if len(data) > 2000 {
			data = data[len(data)-2000:]
		}
		rel, _ := filepath.Rel(e.Dir, path)
		tb.Logf("--- end of %s ---\n%s", rel, data)
	}
}

// ProcessesUsing returns the IDs of the processes whose command line mentions dir: every
// process the test bed starts names its cluster's folder in its arguments.
func ProcessesUsing(dir string) []int {
	if dir == "" { // every command line contains the empty string
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(cmdline, []byte(dir)) {
			pids = append(pids, pid)
		}
	}
	return pids
}
