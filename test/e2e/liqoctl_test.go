package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

// liqoctlBin is upstream Liqo's liqoctl that `make liqoctl` builds (tools/liqoctl/build.sh);
// `make test` names it in LIQO_LIQOCTL.
func liqoctlBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("LIQO_LIQOCTL")
	if bin == "" {
		t.Skip("LIQO_LIQOCTL is not set: run through `make test`, which builds upstream liqoctl v1.2.0 (make liqoctl)")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("LIQO_LIQOCTL=%s: %v (make liqoctl builds it)", bin, err)
	}
	return bin
}

// liqoctl runs upstream liqoctl against the named sandbox cluster and returns its standard
// output; it fails the test on a non-zero exit or on a warning on standard error.
func (r *sandboxRun) liqoctl(t *testing.T, bin, cluster string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, append(args, "--kubeconfig", filepath.Join(r.state, cluster+".kubeconfig"))...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("liqoctl %s on %s: %v\n%s%s", strings.Join(args, " "), cluster, err, stdout.Bytes(), stderr.Bytes())
	}
	if strings.Contains(stderr.String(), "WARN") || strings.Contains(stderr.String(), "ERRO") {
		t.Errorf("liqoctl %s on %s warns:\n%s", strings.Join(args, " "), cluster, stderr.Bytes())
	}
	return stdout.Bytes()
}

// liqoctlInfo is what `liqoctl info -o json` says (the fields checked).
type liqoctlInfo struct {
	Health struct {
		Healthy bool `json:"healthy"`
	} `json:"health"`
	Local struct {
		ClusterID     string `json:"clusterID"`
		Version       string `json:"version"`
		APIServerAddr string `json:"APIServerAddr"`
	} `json:"local"`
	Peerings struct {
		Peers []struct {
			ClusterID            string `json:"clusterID"`
			Role                 string `json:"role"`
			NetworkingStatus     string `json:"networkingStatus"`
			AuthenticationStatus string `json:"authenticationStatus"`
			OffloadingStatus     string `json:"offloadingStatus"`
		} `json:"peers"`
	} `json:"peerings"`
}

// liqoctlPeer is what `liqoctl info peer <id> -o json` says of one peer (the fields checked).
type liqoctlPeer struct {
	Authentication struct {
		Status         string `json:"status"`
		APIServerAddr  string `json:"APIServerAddr"`
		ResourceSlices []struct {
			Name     string `json:"name"`
			Action   string `json:"action"`
			Accepted bool   `json:"accepted"`
		} `json:"resourceSlices"`
	} `json:"authentication"`
	Info struct {
		Role string `json:"role"`
	} `json:"info"`
	Network struct {
		Status string `json:"status"`
	} `json:"network"`
	Offloading struct {
		Status       string `json:"status"`
		VirtualNodes []struct {
			Name          string `json:"name"`
			Status        string `json:"status"`
			ResourceSlice string `json:"resourceSlice"`
		} `json:"virtualNodes"`
	} `json:"offloading"`
}

// TestLiqoctlInfo: upstream liqoctl v1.2.0 reads our sandbox as a Liqo installation. Before any
// peering, `liqoctl info` on each cluster gives its cluster ID, our version and its API server,
// healthy, with no warning. With examples/peering applied, each side lists the other with its
// role and every module Healthy, and `liqoctl info peer` shows on the consumer the provider's
// API server, the slice it consumes (accepted) and the virtual node made from it, and on the
// provider the slice it provides.
func TestLiqoctlInfo(t *testing.T) {
	bin := liqoctlBin(t)
	r := startSandbox(t, 2)
	info := func(cluster string) liqoctlInfo {
		t.Helper()
		var out liqoctlInfo
		raw := r.liqoctl(t, bin, cluster, "info", "-o", "json")
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("liqoctl info -o json on %s: %v\n%s", cluster, err, raw)
		}
		return out
	}
	for _, c := range []string{"consumer", "provider"} {
		got := info(c)
		if got.Local.ClusterID != c || got.Local.Version != version.Version || !strings.HasPrefix(got.Local.APIServerAddr, "https://") ||
			!got.Health.Healthy || len(got.Peerings.Peers) != 0 {
			t.Errorf("liqoctl info on %s before peering: %+v; want cluster ID %s, version %s, an API server, healthy, no peer",
				c, got, c, version.Version)
		}
	}

	args := r.tfArgs("peering", "consumer_kubeconfig="+filepath.Join(r.state, "consumer.kubeconfig"),
		"provider_kubeconfig="+filepath.Join(r.state, "provider.kubeconfig"))
	r.mustTF(t, "peering", append([]string{"apply", "-auto-approve"}, args...)...)
	networking := "Healthy"
	if !r.networking {
		networking = "Disabled"
	}
	for c, peer := range map[string][2]string{"consumer": {"provider", "Provider"}, "provider": {"consumer", "Consumer"}} {
		got := info(c)
		if len(got.Peerings.Peers) != 1 {
			t.Errorf("liqoctl info on %s: peers %+v, want %s", c, got.Peerings.Peers, peer[0])
			continue
		}
		p := got.Peerings.Peers[0]
		if p.ClusterID != peer[0] || p.Role != peer[1] || p.NetworkingStatus != networking ||
			p.AuthenticationStatus != "Healthy" || p.OffloadingStatus != "Healthy" {
			t.Errorf("liqoctl info on %s: peer %+v, want %s as %s, networking %s, authentication and offloading Healthy",
				c, p, peer[0], peer[1], networking)
		}
	}
	var cons map[string]liqoctlPeer
	raw := r.liqoctl(t, bin, "consumer", "info", "peer", "provider", "-o", "json")
	if err := json.Unmarshal(raw, &cons); err != nil {
		t.Fatalf("liqoctl info peer provider -o json: %v\n%s", err, raw)
	}
	p := cons["provider"]
	if p.Info.Role != "Provider" || p.Authentication.Status != "Healthy" || !strings.HasPrefix(p.Authentication.APIServerAddr, "https://") ||
		len(p.Authentication.ResourceSlices) != 1 || p.Authentication.ResourceSlices[0].Action != "Consuming" || !p.Authentication.ResourceSlices[0].Accepted ||
		len(p.Offloading.VirtualNodes) != 1 || p.Offloading.VirtualNodes[0].Status != "Healthy" ||
		p.Offloading.VirtualNodes[0].ResourceSlice != p.Authentication.ResourceSlices[0].Name {
		t.Errorf("liqoctl info peer provider on the consumer:\n%s", raw)
	}
	var prov map[string]liqoctlPeer
	raw = r.liqoctl(t, bin, "provider", "info", "peer", "consumer", "-o", "json")
	if err := json.Unmarshal(raw, &prov); err != nil {
		t.Fatalf("liqoctl info peer consumer -o json: %v\n%s", err, raw)
	}
	if q := prov["consumer"]; q.Info.Role != "Consumer" || len(q.Authentication.ResourceSlices) != 1 ||
		q.Authentication.ResourceSlices[0].Action != "Providing" || !q.Authentication.ResourceSlices[0].Accepted {
		t.Errorf("liqoctl info peer consumer on the provider:\n%s", raw)
	}
	r.mustTF(t, "peering", append([]string{"destroy", "-auto-approve"}, args...)...)
	r.expectNothingLeft(t)
}

// TestLiqoctlPeer: a peering made by upstream liqoctl v1.2.0 against our controllers, without
// networking (its handshake, the slice, the virtual node), shows healthy in its own `info`, and
// its `unpeer --delete-namespaces` removes everything it made.
func TestLiqoctlPeer(t *testing.T) {
	bin := liqoctlBin(t)
	r := startSandbox(t, 2)
	remote := []string{"--remote-kubeconfig", filepath.Join(r.state, "provider.kubeconfig")}
	r.liqoctl(t, bin, "consumer", append([]string{"peer", "--networking-disabled", "--timeout", "3m"}, remote...)...)

	var cons map[string]liqoctlPeer
	raw := r.liqoctl(t, bin, "consumer", "info", "peer", "provider", "-o", "json")
	if err := json.Unmarshal(raw, &cons); err != nil {
		t.Fatalf("liqoctl info peer provider -o json: %v\n%s", err, raw)
	}
	p := cons["provider"]
	if p.Info.Role != "Provider" || p.Authentication.Status != "Healthy" || p.Network.Status != "Disabled" ||
		len(p.Authentication.ResourceSlices) != 1 || p.Authentication.ResourceSlices[0].Action != "Consuming" || !p.Authentication.ResourceSlices[0].Accepted ||
		len(p.Offloading.VirtualNodes) != 1 || p.Offloading.VirtualNodes[0].Status != "Healthy" {
		t.Errorf("liqoctl info peer provider on the consumer after liqoctl peer:\n%s", raw)
	}
	var prov map[string]liqoctlPeer
	raw = r.liqoctl(t, bin, "provider", "info", "peer", "consumer", "-o", "json")
	if err := json.Unmarshal(raw, &prov); err != nil {
		t.Fatalf("liqoctl info peer consumer -o json: %v\n%s", err, raw)
	}
	if q := prov["consumer"]; q.Info.Role != "Consumer" || len(q.Authentication.ResourceSlices) != 1 ||
		q.Authentication.ResourceSlices[0].Action != "Providing" || !q.Authentication.ResourceSlices[0].Accepted {
		t.Errorf("liqoctl info peer consumer on the provider after liqoctl peer:\n%s", raw)
	}
	node := p.Offloading.VirtualNodes
	if len(node) == 1 && !r.nodeReady(t, "consumer", node[0].Name) {
		t.Errorf("virtual node %s is not Ready after liqoctl peer", node[0].Name)
	}

	r.liqoctl(t, bin, "consumer", append([]string{"unpeer", "--delete-namespaces", "--timeout", "3m"}, remote...)...)
	r.expectNothingLeft(t)
}
