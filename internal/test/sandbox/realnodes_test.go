package sandbox_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/test/sandbox"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
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

// TestValidateRealNodes: -real-nodes takes 1 to MaxRealNodes (0 means 1), and more than one
// only with real nodes (-nodes real or auto), each refusal naming the flag and the fix.
func TestValidateRealNodes(t *testing.T) {
	for _, tc := range []struct {
		n    int
		mode string
		want string // in the error; "" for none
	}{
		{0, sandbox.NodesKWOK, ""},
		{1, sandbox.NodesKWOK, ""},
		{2, sandbox.NodesReal, ""},
		{2, sandbox.NodesAuto, ""},
		{sandbox.MaxRealNodes, sandbox.NodesReal, ""},
		{2, sandbox.NodesKWOK, "-real-nodes 2 needs real nodes (-nodes real or auto"},
		{2, "", "-real-nodes 2 needs real nodes"},
		{sandbox.MaxRealNodes + 1, sandbox.NodesReal, "want 1 to 4 real nodes per cluster"},
		{-1, sandbox.NodesReal, "-real-nodes -1: want 1 to 4"},
	} {
		err := (&sandbox.Sandbox{RealNodes: tc.n}).ValidateRealNodes(tc.mode)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("-real-nodes %d with -nodes %q: %v, want %q", tc.n, tc.mode, err, tc.want)
		}
	}
}

// TestResolveNodesFlannel: with more than one real node per cluster and no flannel, auto falls
// back to KWOK in one line naming flannel, and real is an error naming it (where real nodes
// otherwise run: root on Linux with the real-node binaries).
func TestResolveNodesFlannel(t *testing.T) {
	if _, err := testenv.RealNodeBinDir(); err != nil {
		t.Skip(err)
	}
	t.Setenv(testenv.FlannelBinDirEnv, filepath.Join(t.TempDir(), "no-flannel"))
	images := t.TempDir()
	for _, f := range append(sandbox.RealNodeImages(images), filepath.Join(images, "helm"), filepath.Join(images, "Chart.yaml")) {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := &sandbox.Sandbox{StateDir: t.TempDir(), Images: images, Helm: filepath.Join(images, "helm"), Chart: images, RealNodes: 2, Out: io.Discard}
	mode, line, err := s.ResolveNodes(sandbox.NodesAuto)
	if err != nil || mode != sandbox.NodesKWOK || !strings.Contains(line, "-real-nodes 2 needs flannel") || !strings.Contains(line, "make flannel") {
		t.Errorf("auto, 2 nodes, no flannel: %q, %q, %v; want KWOK and a line naming flannel", mode, line, err)
	}
	if _, _, err := s.ResolveNodes(sandbox.NodesReal); err == nil || !strings.Contains(err.Error(), "needs flannel") {
		t.Errorf("real, 2 nodes, no flannel: %v; want an error naming flannel", err)
	}
	s.RealNodes = 1
	if mode, line, err := s.ResolveNodes(sandbox.NodesReal); err != nil || mode != sandbox.NodesReal || !strings.HasPrefix(line, "nodes: real (") {
		t.Errorf("real, 1 node, no flannel: %q, %q, %v; want real nodes (the bridge needs no flannel)", mode, line, err)
	}
}
