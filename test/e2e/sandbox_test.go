// Package e2e runs the main job end to end against the sandbox, as a user does: `make demo`'s
// script on a fresh sandbox, then the examples (peering, bidirectional, declarative, the fleet
// module over three clusters) with the real terraform CLI, checking what each step leaves in the
// clusters and that plans after apply stay quiet.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/sandbox"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// sandboxRun is a sandbox started for the test, and how to reach it.
type sandboxRun struct {
	root, state, bins string
	clients           map[string]client.Client
	networking        bool
	tfEnv             []string
}

// sandboxBinaries are the packages of the binaries the sandbox and terraform use.
var sandboxBinaries = []string{".", "./cmd/liqo-sandbox", "./cmd/liqo-controller-manager", "./cmd/liqo-gateway"}

// TestMain removes the binaries the package's tests built (testenv.BuildOnce) once they ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := testenv.RemoveBuilds(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// requireTerraform skips the test when no terraform is on PATH.
func requireTerraform(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("terraform"); err != nil {
		t.Skip("terraform is not on PATH")
	}
}

// heldByAnother is what `liqo-sandbox up` says when another running sandbox holds the network.
const heldByAnother = "held by another running sandbox"

// startSandbox runs `liqo-sandbox up` with n clusters (and the further sandbox flags, if any) and
// stops it (`down`) when the test ends, checking that nothing is left.
func startSandbox(t testing.TB, n int, flags ...string) *sandboxRun {
	t.Helper()
	requireTerraform(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bins := testenv.BuildOnce(t, sandboxBinaries...)
	state := filepath.Join(t.TempDir(), "sandbox")
	sb := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(bins, "liqo-sandbox"), append([]string{"-state", state, "-provider-bin", bins,
			"-manager-bin", filepath.Join(bins, "liqo-controller-manager"), "-gateway-bin", filepath.Join(bins, "liqo-gateway"),
			"-clusters", fmt.Sprint(n)}, append(append([]string{}, flags...), args...)...)...).CombinedOutput()
		return string(out), err
	}
	// The sandbox's network has fixed names: while another package's sandbox (go test runs
	// packages in parallel) holds it, this one would run without gateways, or not at all with
	// -isolate. Wait for it to be free, up to ten minutes.
	out, err := sb("up")
	for deadline := time.Now().Add(10 * time.Minute); strings.Contains(out, heldByAnother) && time.Now().Before(deadline); {
		if downOut, downErr := sb("down"); downErr != nil {
			t.Logf("liqo-sandbox down (the network held by another): %v\n%s", downErr, downOut)
		}
		t.Logf("the sandbox's network is held by another sandbox: trying again in 15 s")
		time.Sleep(15 * time.Second)
		out, err = sb("up")
	}
	if err != nil {
		t.Fatalf("liqo-sandbox up: %v\n%s", err, out)
	}
	envDir, _ := os.ReadFile(filepath.Join(state, "env-dir"))
	t.Cleanup(func() {
		if out, err := sb("down"); err != nil {
			t.Errorf("liqo-sandbox down: %v\n%s", err, out)
		}
		if left := testenv.ProcessesUsing(state); len(left) > 0 {
			t.Errorf("processes of the sandbox left after down: %v", left)
		}
		if left := testenv.ProcessesUsing(strings.TrimSpace(string(envDir))); len(left) > 0 {
			t.Errorf("cluster processes left after down: %v", left)
		}
		if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("state folder left after down: %v", err)
		}
	})
	netState, _ := os.ReadFile(filepath.Join(state, "networking"))
	r := &sandboxRun{root: root, state: state, bins: bins, clients: map[string]client.Client{},
		networking: strings.TrimSpace(string(netState)) == "enabled",
		tfEnv:      append(os.Environ(), "TF_CLI_CONFIG_FILE="+filepath.Join(state, "terraformrc"), "TF_IN_AUTOMATION=1")}
	if !r.networking {
		t.Logf("the sandbox runs without gateways (%s): peerings without networking", strings.TrimSpace(string(netState)))
	}
	scheme, err := api.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sandbox.ClusterNames[:n] {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(state, name+".kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}
		if r.clients[name], err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// tf runs terraform in an example folder with the sandbox's CLI config, returning its output,
// duration and exit code.
func (r *sandboxRun) tf(t testing.TB, example string, args ...string) (string, time.Duration, int) {
	t.Helper()
	return terraformIn(t, filepath.Join(r.root, "examples", example), r.tfEnv, args...)
}

// terraformIn runs terraform in a folder with the given environment, returning its output,
// duration and exit code; it fails the test when terraform cannot run.
func terraformIn(t testing.TB, dir string, env []string, args ...string) (string, time.Duration, int) {
	t.Helper()
	return cliIn(t, "terraform", dir, env, args...)
}

// cliIn is terraformIn with another Terraform CLI (a path, or a name on PATH): OpenTofu's tofu
// takes the same -chdir and commands.
func cliIn(t testing.TB, cli, dir string, env []string, args ...string) (string, time.Duration, int) {
	t.Helper()
	cmd := exec.Command(cli, append([]string{"-chdir=" + dir}, args...)...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", cli, args, err)
	}
	return out.String(), took, code
}

// mustTF is tf failing the test on a non-zero exit.
func (r *sandboxRun) mustTF(t testing.TB, example string, args ...string) time.Duration {
	t.Helper()
	out, took, code := r.tf(t, example, args...)
	if code != 0 {
		t.Fatalf("terraform %s %v: exit %d\n%s", example, args, code, out)
	}
	return took
}

// tfArgs are the arguments every command of an example takes: its own state file in the
// sandbox's folder, the sandbox's kubeconfigs and networking.
func (r *sandboxRun) tfArgs(example string, vars ...string) []string {
	args := []string{"-input=false", "-no-color", "-state=" + filepath.Join(r.state, example+".tfstate"),
		"-var", fmt.Sprintf("networking=%t", r.networking)}
	for _, v := range vars {
		args = append(args, "-var", v)
	}
	return args
}

// leftovers lists what a peering leaves in a cluster.
func leftovers(ctx context.Context, c client.Client) ([]string, error) {
	var left []string
	nss := &corev1.NamespaceList{}
	if err := c.List(ctx, nss); err != nil {
		return nil, err
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, "liqo-tenant-") || ns.Labels[consts.RemoteNamespaceLabel] == "true" {
			left = append(left, "namespace "+ns.Name+" ("+string(ns.Status.Phase)+")")
		}
	}
	lists := map[string]client.ObjectList{"tenants": &authv1beta1.TenantList{}, "identities": &authv1beta1.IdentityList{},
		"resourceslices": &authv1beta1.ResourceSliceList{}, "foreignclusters": &corev1beta1.ForeignClusterList{},
		"namespacemaps": &offv1beta1.NamespaceMapList{}, "virtualnodes": &offv1beta1.VirtualNodeList{}}
	for name, l := range lists {
		if err := c.List(ctx, l); err != nil {
			return nil, err
		}
		if n := len(mustItems(l)); n > 0 {
			left = append(left, fmt.Sprintf("%d %s", n, name))
		}
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes, client.MatchingLabels{consts.TypeLabel: consts.VirtualNodeType}); err != nil {
		return nil, err
	}
	for _, n := range nodes.Items {
		left = append(left, "virtual node "+n.Name)
	}
	return left, nil
}

func mustItems(l client.ObjectList) []client.Object {
	var out []client.Object
	switch v := l.(type) {
	case *authv1beta1.TenantList:
		for i := range v.Items {
			out = append(out, &v.Items[i])
		}
	case *authv1beta1.IdentityList:
		for i := range v.Items {
			out = append(out, &v.Items[i])
		}
	case *authv1beta1.ResourceSliceList:
		for i := range v.Items {
			out = append(out, &v.Items[i])
		}
	case *corev1beta1.ForeignClusterList:
		for i := range v.Items {
			out = append(out, &v.Items[i])
		}
	case *offv1beta1.NamespaceMapList:
		for i := range v.Items {
			out = append(out, &v.Items[i])
		}
	case *offv1beta1.VirtualNodeList:
		for i := range v.Items {
			out = append(out, &v.Items[i])
		}
	}
	return out
}

// expectNothingLeft checks every cluster for the peerings' objects and the sandbox for
// gateway processes.
func (r *sandboxRun) expectNothingLeft(t testing.TB) {
	t.Helper()
	for name, c := range r.clients {
		left, err := leftovers(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) > 0 {
			t.Errorf("left on %s: %v", name, left)
		}
	}
	// A gateway's command line starts with its binary and -mode (the supervisor's names the
	// binary too, as a flag).
	// The sandbox stops a gateway when its object goes (SIGTERM; it removes its interface and
	// rules before it exits).
	gateway := filepath.Join(r.bins, "liqo-gateway") + "\x00-mode"
	deadline := time.Now().Add(15 * time.Second)
	for len(testenv.ProcessesUsing(gateway)) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if gws := testenv.ProcessesUsing(gateway); len(gws) > 0 {
		t.Errorf("gateway processes left 15 s after the peering went: %v", gws)
	}
	if !r.networking {
		return
	}
	// Nor their tunnel interfaces, in any of the sandbox's network namespaces.
	ifs, err := gatewayInterfaces()
	if err != nil {
		t.Error(err)
	} else if len(ifs) > 0 {
		t.Errorf("gateway interfaces left after the peering went: %v", ifs)
	}
}

// nodeReady reports whether a node of the named cluster exists and is Ready.
func (r *sandboxRun) nodeReady(t *testing.T, cluster, node string) bool {
	t.Helper()
	n := &corev1.Node{}
	if err := r.clients[cluster].Get(t.Context(), client.ObjectKey{Name: node}, n); err != nil {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// quietWait is how long after an apply the plans of expectQuietPlans start: past the gateways'
// keep-alive and latency refresh (10 s), so that the controllers and gateways have written
// their periodic status at least once.
const quietWait = 12 * time.Second

// expectQuietPlans waits quietWait, then plans the example twice: each plan must find no
// change (exit 0 with -detailed-exitcode) and no object changed outside of Terraform, as a
// reviewer or a drift detection run would see it. It returns the last plan's duration.
func (r *sandboxRun) expectQuietPlans(t *testing.T, example string, args ...string) time.Duration {
	t.Helper()
	time.Sleep(quietWait)
	var took time.Duration
	for i := 1; i <= 2; i++ {
		out, d, code := r.tf(t, example, append([]string{"plan", "-detailed-exitcode"}, args...)...)
		took = d
		if code != 0 || strings.Contains(out, "changed outside of Terraform") || !strings.Contains(out, "No changes.") {
			t.Errorf("%s: plan %d, %s after apply: exit %d, want 0, \"No changes.\" and nothing changed outside of Terraform\n%s",
				example, i, quietWait, code, out)
		}
	}
	return took
}

// expectImportsQuiet checks that what example's state (in the sandbox's folder) holds, imported
// by ID into an empty state with the example's configuration and the variables of args (its
// -var pairs), plans nothing but the imports and what except says (testenv.ExpectImportsQuiet).
// Its subtest tofu-by-identity checks the same under OpenTofu (LIQO_TOFU), by resource identity.
func (r *sandboxRun) expectImportsQuiet(t *testing.T, example string, args []string, except map[string]string) {
	t.Helper()
	vars := varPairs(args)
	testenv.ExpectImportsQuiet(t, filepath.Join(r.root, "examples"), example, filepath.Join(r.state, example+".tfstate"), vars, except,
		func(dir string, args ...string) (string, int) {
			out, _, code := terraformIn(t, dir, r.tfEnv, args...)
			return out, code
		})
	r.expectTofuImportsQuiet(t, example, vars, except, true)
}

// varPairs returns the -var pairs of a command's arguments.
func varPairs(args []string) []string {
	var vars []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-var" {
			vars = append(vars, args[i], args[i+1])
		}
	}
	return vars
}

// expectTofuImportsQuiet is expectImportsQuiet's check under OpenTofu (LIQO_TOFU), in a subtest
// tofu-by-identity or tofu-by-id: by resource identity or by ID. vars are -var pairs.
func (r *sandboxRun) expectTofuImportsQuiet(t *testing.T, example string, vars []string, except map[string]string, byIdentity bool) {
	t.Helper()
	name := "tofu-by-id"
	if byIdentity {
		name = "tofu-by-identity"
	}
	t.Run(name, func(t *testing.T) {
		tofu := requireTofu(t)
		state := filepath.Join(r.state, example+".tfstate")
		out, _, code := r.tf(t, example, "show", "-json", "-no-color", state) // terraform wrote the state
		if code != 0 {
			t.Fatalf("terraform show -json %s: exit %d\n%s", state, code, out)
		}
		testenv.ExpectImports(t, testenv.ImportCheck{Examples: filepath.Join(r.root, "examples"), Example: example,
			StateJSON: []byte(out), Vars: vars, Except: except, ByIdentity: byIdentity,
			CLI: func(dir string, args ...string) (string, int) {
				out, _, code := cliIn(t, tofu, dir, r.tfEnv, args...)
				return out, code
			}})
	})
}

// expectDemoTunnel checks what the demo shows of the tunnel: the Connection Connected on each
// side, then an offloaded pod answering HTTP at its address on the provider from the consumer's
// stand-in pod, through the tunnel.
func expectDemoTunnel(t *testing.T, out string) {
	t.Helper()
	for _, side := range []string{"consumer", "provider"} {
		if !regexp.MustCompile(`(?m)^# ` + side + `\n.*\n.*\bConnected\b`).MatchString(out) {
			t.Errorf("the demo does not show the %s's Connection Connected:\n%s", side, out)
		}
	}
	m := regexp.MustCompile(`the consumer's pod demo/(\S+) runs on the provider at (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the demo does not name the offloaded pod it reaches:\n%s", out)
	}
	want := fmt.Sprintf("from consumer's pod network (%s): 200 OK in", sandbox.PodAddress("consumer"))
	answer := fmt.Sprintf("pod demo-consumer/%s of cluster provider (%s) answers %s", m[1], m[2], sandbox.PodAddress("consumer"))
	if !strings.Contains(out, want) || !strings.Contains(out, answer) {
		t.Errorf("the demo's request to the offloaded pod: want %q and %q in:\n%s", want, answer, out)
	}
}

// TestMainJob: `make demo`'s script on a fresh two-cluster sandbox (examples/peering applied,
// the demo namespace offloaded, a Deployment Available with its pods running on the provider,
// and with networking the stand-in pods reaching each other through the tunnel, which they
// could not before); then two plans after the keep-alive interval are empty, a cpu change is an in-place update, and
// destroy leaves no Liqo object, tenant or remote namespace, virtual node, gateway process or
// tunnel interface in either cluster; what each example applied, imported by ID into an empty
// state, plans no change. Then the bidirectional example (quiet plans and import likewise),
// destroying one direction first: the other keeps its virtual node and its tunnel. Timings
// are logged.
func TestMainJob(t *testing.T) {
	r := startSandbox(t, 2)
	ctx := t.Context()
	both := [][2]string{{"consumer", "provider"}, {"provider", "consumer"}}
	if r.networking {
		// Nothing routes one cluster's pod CIDR to the other but the tunnel.
		r.expectNoPodTraffic(t, "before peering", "consumer", "provider")
	}

	demo := exec.Command("bash", filepath.Join(r.root, "hack", "demo.sh"))
	demo.Env = append(os.Environ(), "SANDBOX_STATE="+r.state, "KUBECTL="+filepath.Join(mustBinDir(t), "kubectl"),
		"SANDBOX_BIN="+filepath.Join(r.bins, "liqo-sandbox"))
	demoOut, err := demo.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/demo.sh: %v\n%s", err, demoOut)
	}
	t.Logf("demo:\n%s", demoOut)
	if strings.Contains(string(demoOut), "Deprecated") {
		t.Errorf("terraform warns of something deprecated in the demo:\n%s", demoOut)
	}
	// The demo keeps its state in its working copy of examples/peering in the sandbox's folder;
	// the steps below go on from it with the tests' own state file.
	if err := os.Rename(filepath.Join(r.state, "peering", "terraform.tfstate"), filepath.Join(r.state, "peering.tfstate")); err != nil {
		t.Fatalf("the demo's state: %v", err)
	}
	// The demo times its `terraform apply`, which returns once the virtual node is Ready (and,
	// with networking, the tunnel is up).
	applied := regexp.MustCompile(`applied in (\d+) ms`).FindSubmatch(demoOut)
	if applied == nil {
		t.Errorf("the demo does not say how long its apply took (\"applied in N ms\")")
	}
	dep := &appsv1.Deployment{}
	if err := r.clients["consumer"].Get(ctx, client.ObjectKey{Namespace: "demo", Name: "hello"}, dep); err != nil || dep.Status.AvailableReplicas != 3 {
		t.Errorf("the demo Deployment: %d available, %v", dep.Status.AvailableReplicas, err)
	}
	remote := &corev1.PodList{}
	if err := r.clients["provider"].List(ctx, remote, client.InNamespace("demo-consumer")); err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, p := range remote.Items {
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	if running != 3 {
		t.Errorf("%d of the Deployment's pods running on the provider, want 3", running)
	}
	if r.networking {
		// The demo shows the tunnel: both sides' Connections, then an offloaded pod on the
		// provider answering HTTP from the consumer's pod network.
		expectDemoTunnel(t, string(demoOut))
		r.expectPodTraffic(t, "examples/peering", both...)
		// One tunnel interface per gateway: the server's on the provider, the client's on the
		// consumer (what the check after destroy looks for).
		if ifs, err := gatewayInterfaces(); err != nil || len(ifs) != 2 {
			t.Errorf("gateway interfaces while peered: %v (%v), want 2", ifs, err)
		}
	}

	// Day-2 actions on that peering; it is whole again afterwards.
	r.expectDay2(t)

	// The demo applied examples/peering; its state is now the tests' (above).
	args := func(vars ...string) []string {
		return r.tfArgs("peering", append([]string{"consumer_kubeconfig=" + filepath.Join(r.state, "consumer.kubeconfig"),
			"provider_kubeconfig=" + filepath.Join(r.state, "provider.kubeconfig")}, vars...)...)
	}
	plan := r.expectQuietPlans(t, "peering", args()...)
	r.expectImportsQuiet(t, "peering", args(), nil)
	r.expectTofuImportsQuiet(t, "peering", varPairs(args()), nil, false)
	out, _, code := r.tf(t, "peering", append([]string{"plan", "-detailed-exitcode"}, args("cpu=3")...)...)
	if code != 2 || !strings.Contains(out, "update in-place") || strings.Contains(out, "must be replaced") {
		t.Errorf("plan with cpu = 3: exit %d, want an in-place update\n%s", code, out)
	}
	update := r.mustTF(t, "peering", append([]string{"apply", "-auto-approve"}, args("cpu=3")...)...)
	node := &corev1.Node{}
	if err := r.clients["consumer"].Get(ctx, client.ObjectKey{Name: "provider"}, node); err != nil || node.Status.Capacity.Cpu().String() != "3" {
		t.Errorf("virtual node after cpu = 3: capacity %v, %v", node.Status.Capacity, err)
	}
	destroy := r.mustTF(t, "peering", append([]string{"destroy", "-auto-approve"}, args("cpu=3")...)...)
	r.expectNothingLeft(t)
	demoApply := "?"
	if applied != nil {
		demoApply = string(applied[1])
	}
	t.Logf("examples/peering (networking %t): apply to a Ready virtual node %s ms (the demo's), no-change plan %s, cpu update %s, destroy %s",
		r.networking, demoApply, plan.Round(time.Millisecond), update.Round(time.Millisecond), destroy.Round(time.Millisecond))

	// Both directions; destroying one leaves the other working.
	bi := r.tfArgs("bidirectional", "consumer_kubeconfig="+filepath.Join(r.state, "consumer.kubeconfig"),
		"provider_kubeconfig="+filepath.Join(r.state, "provider.kubeconfig"))
	apply := r.mustTF(t, "bidirectional", append([]string{"apply", "-auto-approve"}, bi...)...)
	if !r.nodeReady(t, "consumer", "provider") || !r.nodeReady(t, "provider", "consumer") {
		t.Fatal("bidirectional: a virtual node is not Ready")
	}
	biPlan := r.expectQuietPlans(t, "bidirectional", bi...)
	r.expectImportsQuiet(t, "bidirectional", bi, nil)
	if r.networking {
		r.expectPodTraffic(t, "examples/bidirectional", both...)
	}
	destroyOne := r.mustTF(t, "bidirectional", append([]string{"destroy", "-auto-approve", "-target=liqo_peering.provider_to_consumer"}, bi...)...)
	if !r.nodeReady(t, "consumer", "provider") {
		t.Error("bidirectional: the consumer's virtual node is not Ready after the other direction went")
	}
	if r.nodeReady(t, "provider", "consumer") {
		t.Error("bidirectional: the destroyed direction's virtual node is still there")
	}
	if r.networking {
		// The remaining direction still uses the tunnel.
		r.expectPodTraffic(t, "bidirectional, one direction destroyed", both...)
	}
	out, _, code = r.tf(t, "bidirectional", append([]string{"plan", "-detailed-exitcode", "-target=liqo_peering.consumer_to_provider"}, bi...)...)
	if code != 0 {
		t.Errorf("bidirectional: the remaining direction plans changes (exit %d)\n%s", code, out)
	}
	destroy = r.mustTF(t, "bidirectional", append([]string{"destroy", "-auto-approve"}, bi...)...)
	r.expectNothingLeft(t)
	t.Logf("examples/bidirectional (networking %t): apply to both virtual nodes Ready %s, no-change plan %s, destroy of one direction %s, "+
		"destroy of the rest %s", r.networking, apply.Round(time.Millisecond), biPlan.Round(time.Millisecond),
		destroyOne.Round(time.Millisecond), destroy.Round(time.Millisecond))
}

// TestFleet: the fleet module over the sandbox's three clusters, hub-and-spoke: plan, apply
// (with networking, the hub's stand-in pod reaches each spoke's and back), an empty plan,
// destroy (nothing left). Timings are logged.
func TestFleet(t *testing.T) {
	r := startSandbox(t, 3)
	args := r.tfArgs("fleet", fmt.Sprintf(`kubeconfigs={consumer=%q,provider=%q,provider-2=%q}`,
		filepath.Join(r.state, "consumer.kubeconfig"), filepath.Join(r.state, "provider.kubeconfig"), filepath.Join(r.state, "provider-2.kubeconfig")))
	r.mustTF(t, "fleet", "get", "-no-color") // installs the local module (init would look the provider up in the registry)
	out, _, code := r.tf(t, "fleet", append([]string{"plan", "-detailed-exitcode"}, args...)...)
	if code != 2 || !strings.Contains(out, "2 to add") {
		t.Fatalf("first plan: exit %d, want 2 peerings to add\n%s", code, out)
	}
	apply := r.mustTF(t, "fleet", append([]string{"apply", "-auto-approve"}, args...)...)
	for _, n := range []string{"provider", "provider-2"} {
		if !r.nodeReady(t, "consumer", n) {
			t.Errorf("the hub's virtual node for %s is not Ready", n)
		}
	}
	if r.networking {
		// The hub reaches both spokes, each through its own tunnel.
		r.expectPodTraffic(t, "examples/fleet", [2]string{"consumer", "provider"}, [2]string{"consumer", "provider-2"},
			[2]string{"provider", "consumer"}, [2]string{"provider-2", "consumer"})
	}
	plan := r.expectQuietPlans(t, "fleet", args...)
	r.expectImportsQuiet(t, "fleet", args, nil)
	destroy := r.mustTF(t, "fleet", append([]string{"destroy", "-auto-approve"}, args...)...)
	r.expectNothingLeft(t)
	t.Logf("examples/fleet (3 clusters, hub-and-spoke, networking %t): apply to Ready virtual nodes %s, no-change plan %s, destroy %s",
		r.networking, apply.Round(time.Millisecond), plan.Round(time.Millisecond), destroy.Round(time.Millisecond))
}

func mustBinDir(t *testing.T) string {
	t.Helper()
	d, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDeclarative: examples/declarative (seed 003's flow, resource by resource, across two
// provider aliases) on the sandbox, its gateway server behind a node port of the provider's
// gateway host: apply; with networking both Connections come up and the stand-in pods reach
// each other through the tunnel; two plans after the keep-alive interval are empty; destroy
// leaves nothing. Timings are logged.
func TestDeclarative(t *testing.T) {
	r := startSandbox(t, 2)
	args := []string{"-input=false", "-no-color", "-state=" + filepath.Join(r.state, "declarative.tfstate"),
		"-var", "consumer_kubeconfig=" + filepath.Join(r.state, "consumer.kubeconfig"),
		"-var", "provider_kubeconfig=" + filepath.Join(r.state, "provider.kubeconfig"),
		"-var", "consumer_cluster_id=consumer", "-var", "provider_cluster_id=provider",
		"-var", "gateway_address=" + sandbox.HostAddress("provider")}
	apply := r.mustTF(t, "declarative", append([]string{"apply", "-auto-approve"}, args...)...)
	// The example does not wait for the virtual node: the slice is granted, then the node comes,
	// named after the provider and the slice ("test").
	deadline := time.Now().Add(60 * time.Second)
	for !r.nodeReady(t, "consumer", "provider-test") && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if !r.nodeReady(t, "consumer", "provider-test") {
		t.Error("the consumer's virtual node provider-test is not Ready 60 s after apply")
	}
	if r.networking {
		for _, side := range []string{"consumer", "provider"} {
			r.waitConnected(t, side)
		}
		r.expectPodTraffic(t, "examples/declarative", [2]string{"consumer", "provider"}, [2]string{"provider", "consumer"})
	}
	plan := r.expectQuietPlans(t, "declarative", args...)
	// What no import reads: liqo_identity's write-only kubeconfig (written again), and the
	// private key of liqo_consumer_identity's credentials (issued again).
	r.expectImportsQuiet(t, "declarative", args, map[string]string{"liqo_identity.this": "update", "liqo_consumer_identity.this": "replace"})
	r.expectUpstreamAccepts(t)
	destroy := r.mustTF(t, "declarative", append([]string{"destroy", "-auto-approve"}, args...)...)
	r.expectNothingLeft(t)
	t.Logf("examples/declarative (networking %t): apply %s, no-change plan %s, destroy %s",
		r.networking, apply.Round(time.Millisecond), plan.Round(time.Millisecond), destroy.Round(time.Millisecond))
}

// waitConnected waits up to 30 s for a Connection of the named cluster to be Connected.
func (r *sandboxRun) waitConnected(t *testing.T, cluster string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var seen []string
	for time.Now().Before(deadline) {
		conns := &netv1beta1.ConnectionList{}
		if err := r.clients[cluster].List(t.Context(), conns); err != nil {
			t.Fatal(err)
		}
		seen = seen[:0]
		for _, c := range conns.Items {
			if c.Status.Value == netv1beta1.Connected {
				return
			}
			seen = append(seen, c.Namespace+"/"+c.Name+": "+string(c.Status.Value))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("no Connection of %s Connected within 30 s: %v", cluster, seen)
}
