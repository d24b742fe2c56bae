package sandbox_test

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/sandbox"
)

// TestResolveNodes: kwok stays kwok; auto falls back to KWOK in one line saying why when real
// nodes lack something (here helm), and real is then an error naming it; an unknown mode is
// an error.
func TestResolveNodes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-helm")
	s := &sandbox.Sandbox{StateDir: t.TempDir(), Images: t.TempDir(), Helm: missing, Chart: t.TempDir(), Out: io.Discard}
	if mode, line, err := s.ResolveNodes(sandbox.NodesKWOK); err != nil || mode != sandbox.NodesKWOK || !strings.HasPrefix(line, "nodes: KWOK") {
		t.Errorf("kwok: %q, %q, %v", mode, line, err)
	}
	mode, line, err := s.ResolveNodes(sandbox.NodesAuto)
	if err != nil || mode != sandbox.NodesKWOK || !strings.HasPrefix(line, "nodes: KWOK, not real: ") || strings.Contains(line, "\n") {
		t.Errorf("auto without what real nodes need: %q, %q, %v; want KWOK and one line saying why", mode, line, err)
	}
	if _, _, err := s.ResolveNodes(sandbox.NodesReal); err == nil || !strings.Contains(err.Error(), "real nodes unavailable") {
		t.Errorf("real without what real nodes need: %v, want an error saying why", err)
	}
	if _, _, err := s.ResolveNodes("vms"); err == nil || !strings.Contains(err.Error(), `"vms"`) {
		t.Errorf("unknown mode: %v, want an error naming it", err)
	}
}
