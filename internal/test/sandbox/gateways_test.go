package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/nsping"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
	"github.com/peerkit/terraform-provider-liqo/internal/test/sandbox"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// requireNetworking skips the test unless the sandbox can run gateways here and no other
// sandbox holds the network's fixed names.
func requireNetworking(t *testing.T) {
	t.Helper()
	testenv.RequireLong(t, "runs the sandbox with its gateways")
	if os.Geteuid() != 0 {
		t.Skip("needs root: the sandbox runs the gateways in network namespaces only as root")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("needs /dev/net/tun")
	}
	for _, bin := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("needs %s on PATH", bin)
		}
	}
	if _, err := net.InterfaceByName(sandbox.BridgeName); err == nil {
		t.Skipf("a sandbox is running on this machine (bridge %s exists): its network names are fixed", sandbox.BridgeName)
	}
}

// TestSandboxGateways brings up a two-cluster sandbox as root, peers the clusters with
// networking through a LoadBalancer gateway, and checks: the gateway server's endpoint is the
// provider's gateway host (the sandbox's load balancer), both Connections are Connected with a
// latency, the stand-in pods ping each other through the tunnel both ways, a killed gateway is
// restarted, unpeering stops the gateways, and `down` leaves no process, network namespace,
// link, socket or file.
func TestSandboxGateways(t *testing.T) {
	requireNetworking(t)
	bins := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", bins, "../../../cmd/liqo-sandbox", "../../../cmd/liqo-controller-manager",
		"../../../cmd/liqo-gateway").CombinedOutput(); err != nil {
		t.Fatalf("building liqo-sandbox, liqo-controller-manager and liqo-gateway: %v\n%s", err, out)
	}
	bin, gatewayBin := filepath.Join(bins, "liqo-sandbox"), filepath.Join(bins, "liqo-gateway")
	state := filepath.Join(t.TempDir(), "state")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"-state", state, "-manager-bin", filepath.Join(bins, "liqo-controller-manager"),
			"-gateway-bin", gatewayBin}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("liqo-sandbox %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	downDone := false
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(state, "logs", "gateway-*.log"))
			managers, _ := filepath.Glob(filepath.Join(state, "logs", "*-controller-manager.log"))
			for _, l := range append(append(logs, managers...), filepath.Join(state, "sandbox.log")) {
				data, _ := os.ReadFile(l)
				t.Logf("--- %s ---\n%s", filepath.Base(l), tail(string(data), 40))
			}
		}
		if !downDone {
			_, _ = exec.Command(bin, "-state", state, "down").CombinedOutput()
		}
	})

	out := run("up")
	if strings.Contains(out, "held by another running sandbox") {
		run("down")
		downDone = true
		t.Skip("another sandbox started meanwhile and holds the network's fixed names")
	}
	if !strings.Contains(out, "Networking enabled") || !strings.Contains(out, sandbox.PodNetns("consumer")) {
		t.Errorf("up does not tell about the network:\n%s", out)
	}
	envDir, err := os.ReadFile(filepath.Join(state, "env-dir"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	consumer, provider := sandboxCluster(t, state, "consumer"), sandboxCluster(t, state, "provider")
	opts := peering.Options{
		Networking: true,
		Gateway:    peering.Gateway{ServiceType: corev1.ServiceTypeLoadBalancer, Port: 51840, MTU: 1340},
		Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"),
			corev1.ResourcePods: resource.MustParse("20")},
		PollInterval: 50 * time.Millisecond,
	}
	consumerNS, providerNS := peering.TenantNamespace("provider"), peering.TenantNamespace("consumer")

	// Time from the start of Peer to both Connections Connected, watched alongside.
	start := time.Now()
	connected := make(chan time.Duration, 1)
	go func() {
		for ctx.Err() == nil {
			if connectedWithLatency(ctx, consumer, consumerNS) && connectedWithLatency(ctx, provider, providerNS) {
				connected <- time.Since(start)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	st, err := peering.Peer(ctx, consumer, provider, opts)
	if err != nil {
		t.Fatalf("peering: %v", err)
	}
	peerTime := time.Since(start)
	var toConnected time.Duration
	select {
	case toConnected = <-connected:
	case <-time.After(10 * time.Second):
		t.Fatal("Peer returned but both Connections are not Connected with a latency")
	}
	t.Logf("Peer start to both Connections Connected: %s; Peer returned after %s; networking %s",
		toConnected.Round(time.Millisecond), peerTime.Round(time.Millisecond), st.Networking)
	if st.Networking != peering.StatusEstablished {
		t.Errorf("the peering reports networking %q, want %s: %+v", st.Networking, peering.StatusEstablished, st)
	}

	// The sandbox's load balancer gave the server's Service the provider's gateway host address.
	gws := &netv1beta1.GatewayServer{}
	if err := provider.Client.Get(ctx, client.ObjectKey{Namespace: providerNS, Name: "consumer"}, gws); err != nil {
		t.Fatal(err)
	}
	if ep := gws.Status.Endpoint; ep == nil || len(ep.Addresses) != 1 || ep.Addresses[0] != sandbox.HostAddress("provider") || ep.Port != 51840 {
		t.Errorf("GatewayServer endpoint %+v, want %s:51840", gws.Status.Endpoint, sandbox.HostAddress("provider"))
	}

	// One gateway process per gateway object, its tunnel in its cluster's gateway host (the
	// process's own namespace is no proof: its API dialer visits the supervisor's with a thread).
	gateways := gatewayPIDs(gatewayBin)
	if len(gateways) != 2 {
		t.Fatalf("gateway processes: %v, want a server and a client", gateways)
	}
	for pid, cmdline := range gateways {
		mode := "client"
		if strings.Contains(cmdline, "-mode server") {
			mode = "server"
		}
		host := map[string]string{"server": sandbox.HostNetns("provider"), "client": sandbox.HostNetns("consumer")}[mode]
		_, rest, _ := strings.Cut(cmdline, "-interface ")
		ifc, _, _ := strings.Cut(rest, " ")
		if out, err := exec.Command("ip", "-n", host, "link", "show", ifc, "type", "tun").CombinedOutput(); err != nil || len(out) == 0 {
			t.Errorf("the %s gateway (pid %d) has no tunnel %q in network namespace %s: %v %s", mode, pid, ifc, host, err, out)
		}
	}

	// Pod to pod through the tunnel, both ways.
	for _, dir := range [][2]string{{"consumer", "provider"}, {"provider", "consumer"}} {
		rtt, err := nsping.Ping(sandbox.PodNetns(dir[0]), sandbox.PodAddress(dir[1]), 10)
		if err != nil {
			t.Fatalf("ping from %s's pod to %s's pod (%s): %v", dir[0], dir[1], sandbox.PodAddress(dir[1]), err)
		}
		t.Logf("ping %s pod -> %s pod (%s) through the tunnel: average RTT %s over 10", dir[0], dir[1], sandbox.PodAddress(dir[1]), rtt)
	}

	// A second server on the provider's port is refused with a Warning Event; on another port it runs.
	checkPortClash(ctx, t, provider, gatewayBin)

	// A gateway that dies is restarted, and the tunnel comes back.
	var serverPID int
	for pid, cmdline := range gateways {
		if strings.Contains(cmdline, "-mode server") {
			serverPID = pid
		}
	}
	if err := syscall.Kill(serverPID, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the server gateway: %v", err)
	}
	killed := time.Now()
	for {
		if pids := gatewayPIDs(gatewayBin); len(pids) == 2 && pids[serverPID] == "" {
			break
		}
		if time.Since(killed) > 20*time.Second {
			t.Fatalf("the killed server gateway was not restarted: %v", gatewayPIDs(gatewayBin))
		}
		time.Sleep(50 * time.Millisecond)
	}
	var lastErr error
	for time.Since(killed) < 30*time.Second {
		if _, lastErr = nsping.Ping(sandbox.PodNetns("consumer"), sandbox.PodAddress("provider"), 1); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("no traffic after the server gateway was restarted: %v", lastErr)
	}
	t.Logf("server gateway killed: restarted and traffic back after %s", time.Since(killed).Round(time.Millisecond))

	if err := peering.Unpeer(ctx, consumer, provider, opts); err != nil {
		t.Fatalf("unpeering: %v", err)
	}
	for deadline := time.Now().Add(20 * time.Second); len(gatewayPIDs(gatewayBin)) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gateways still running after unpeering: %v", gatewayPIDs(gatewayBin))
		}
	}
	for _, c := range []string{"consumer", "provider"} {
		if out, err := exec.Command("ip", "-n", sandbox.HostNetns(c), "-o", "link", "show", "type", "tun").CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("tunnel interfaces left in %s after unpeering (err %v):\n%s", sandbox.HostNetns(c), err, out)
		}
	}

	run("down")
	downDone = true
	assertNoNetwork(t)
	if left := testenv.ProcessesUsing(string(envDir)); len(left) > 0 {
		t.Errorf("processes left after down: %v", left)
	}
	for _, p := range []string{state, string(envDir)} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after down (stat: %v)", p, err)
		}
	}
}

// checkPortClash adds a GatewayServer on the port of the running one and checks it is refused
// with a PortInUse Event, then moves it to another port and checks its gateway runs, then
// deletes it and checks its gateway stops.
func checkPortClash(ctx context.Context, t *testing.T, provider peering.Cluster, gatewayBin string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clash"}}
	if err := provider.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	gw := &netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "other"},
		Spec: netv1beta1.GatewayServerSpec{Endpoint: netv1beta1.Endpoint{Port: 51840, ServiceType: corev1.ServiceTypeLoadBalancer}}}
	if err := provider.Client.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "a PortInUse Event on the clashing GatewayServer", 20*time.Second, func(ctx context.Context) bool {
		evs := &corev1.EventList{}
		if err := provider.Client.List(ctx, evs, client.InNamespace(ns.Name)); err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == "PortInUse" && e.InvolvedObject.Name == gw.Name && strings.Contains(e.Message, "another port") {
				return true
			}
		}
		return false
	})
	if n := len(gatewayPIDs(gatewayBin)); n != 2 {
		t.Errorf("%d gateway processes with a clashing server, want 2", n)
	}
	patch := client.MergeFrom(gw.DeepCopy())
	gw.Spec.Endpoint.Port = 51841
	if err := provider.Client.Patch(ctx, gw, patch); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the gateway of the server on port 51841", 20*time.Second, func(context.Context) bool {
		for _, cmdline := range gatewayPIDs(gatewayBin) {
			if strings.Contains(cmdline, "-namespace clash -gateway other") {
				return true
			}
		}
		return false
	})
	if err := provider.Client.Delete(ctx, gw); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the gateway of the deleted server to stop", 20*time.Second, func(context.Context) bool { return len(gatewayPIDs(gatewayBin)) == 2 })
}

// TestSandboxDownSweepsNetwork checks that `down` removes what a killed supervisor left of the
// network (namespaces with a process inside, links, tunnel sockets), and leaves a network whose
// supervisor is alive.
func TestSandboxDownSweepsNetwork(t *testing.T) {
	requireNetworking(t)
	bins := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", bins, "../../../cmd/liqo-sandbox").CombinedOutput(); err != nil {
		t.Fatalf("building liqo-sandbox: %v\n%s", err, out)
	}
	bin := filepath.Join(bins, "liqo-sandbox")
	down := func() string {
		t.Helper()
		out, err := exec.Command(bin, "-state", filepath.Join(t.TempDir(), "state"), "down").CombinedOutput()
		if err != nil {
			t.Fatalf("liqo-sandbox down: %v\n%s", err, out)
		}
		return string(out)
	}
	ns := sandbox.NetPrefix + "sweeptest"
	sh := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", ns).Run()
		_ = exec.Command("ip", "link", "del", sandbox.BridgeName).Run()
	})
	sh("ip", "netns", "add", ns)
	sh("ip", "link", "add", sandbox.BridgeName, "type", "bridge")
	sh("ip", "link", "add", sandbox.NetPrefix+"u9", "type", "veth", "peer", "name", "ul0", "netns", ns)
	sock := "/var/run/wireguard/lqsbs00000000.sock"
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(sock) })
	// A stand-in for a gateway whose supervisor was killed.
	sleeper := exec.Command("ip", "netns", "exec", ns, "sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = sleeper.Wait(); close(exited) }()
	t.Cleanup(func() { _ = sleeper.Process.Kill(); <-exited })

	// While the supervisor named on the bridge runs (a stand-in whose command line says
	// "serve"), down leaves the network alone.
	owner := exec.Command("sh", "-c", "sleep 300", "serve")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = owner.Process.Kill(); _ = owner.Wait() })
	sh("ip", "link", "set", sandbox.BridgeName, "alias", fmt.Sprintf("liqo-sandbox pid=%d", owner.Process.Pid))
	if out := down(); !strings.Contains(out, "left alone") {
		t.Errorf("down with the network's supervisor alive:\n%s", out)
	}
	if _, err := net.InterfaceByName(sandbox.BridgeName); err != nil {
		t.Fatalf("down removed the bridge of a running supervisor: %v", err)
	}
	select {
	case <-exited:
		t.Fatal("down killed a process in the namespace of a running supervisor")
	default:
	}

	// Once it is gone, down removes everything.
	_ = owner.Process.Kill()
	_ = owner.Wait()
	out := down()
	if !strings.Contains(out, "removing the network") {
		t.Errorf("down did not say it removes the leftovers:\n%s", out)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Error("the process inside the leftover namespace was not killed")
	}
	assertNoNetwork(t)
}

// assertNoNetwork fails the test if any network namespace, root-namespace link or tunnel
// socket of the sandbox is left.
func assertNoNetwork(t *testing.T) {
	t.Helper()
	entries, _ := os.ReadDir("/var/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), sandbox.NetPrefix) {
			t.Errorf("network namespace %s left", e.Name())
		}
	}
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, sandbox.NetPrefix) {
			t.Errorf("link %s left", i.Name)
		}
	}
	if socks, _ := filepath.Glob("/var/run/wireguard/lqsb*.sock"); len(socks) > 0 {
		t.Errorf("tunnel sockets left: %v", socks)
	}
}

// sandboxCluster is an admin client of a sandbox cluster, from its kubeconfig in the state folder.
func sandboxCluster(t *testing.T, state, name string) peering.Cluster {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(state, name+".kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := api.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return peering.Cluster{Name: name, Client: c}
}

// connectedWithLatency tells whether a Connection in ns is Connected with a measured latency.
func connectedWithLatency(ctx context.Context, c peering.Cluster, ns string) bool {
	list := &netv1beta1.ConnectionList{}
	if err := c.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return false
	}
	for _, conn := range list.Items {
		if conn.Status.Value == netv1beta1.Connected && conn.Status.Latency.Value != "" {
			return true
		}
	}
	return false
}

// gatewayPIDs returns the running processes of the gateway binary, with their command lines.
func gatewayPIDs(gatewayBin string) map[int]string {
	pids := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) > 0 && args[0] == gatewayBin {
			pids[pid] = strings.Join(args, " ")
		}
	}
	return pids
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
