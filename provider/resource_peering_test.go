package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/workload"
	"github.com/peerkit/terraform-provider-liqo/internal/nsping"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
	"github.com/peerkit/terraform-provider-liqo/internal/test/sandbox"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/provider"
)

// The liqo_peering tests need the real liqo controller manager on each cluster (cluster IDs,
// nonce, tenant, identity, negotiation, virtual node). The package's shared clusters do not run
// it (other tests there play the controllers' part by hand), so these tests start clusters of
// their own, named after the cluster IDs their managers use.

var (
	managerBinOnce sync.Once
	managerBinPath string
	managerBinErr  error
)

// managerBinary builds liqo-controller-manager once, next to the provider binary (removed by
// TestMain).
func managerBinary(t *testing.T) string {
	t.Helper()
	dir := providerBinary(t)
	managerBinOnce.Do(func() {
		managerBinPath = filepath.Join(dir, "liqo-controller-manager")
		if out, err := exec.Command("go", "build", "-o", managerBinPath, "../cmd/liqo-controller-manager").CombinedOutput(); err != nil {
			managerBinErr = fmt.Errorf("building the controller manager: %w\n%s", err, out)
		}
	})
	if managerBinErr != nil {
		t.Fatal(managerBinErr)
	}
	return managerBinPath
}

// peeringEnv starts clusters named by the given IDs, each with a KWOK node to share (8 CPUs,
// 16Gi, 200 pods: half of it is shared) and our controller manager, for the length of the test.
func peeringEnv(t *testing.T, ids ...string) *testenv.Env {
	t.Helper()
	return peeringEnvWith(t, nil, ids...)
}

// peeringEnvWith is peeringEnv with more arguments for the controller managers.
func peeringEnvWith(t *testing.T, managerArgs []string, ids ...string) *testenv.Env {
	t.Helper()
	e, _ := peeringEnvStoppable(t, managerArgs, ids...)
	return e
}

// peeringPodCIDR is the pod CIDR of the i-th cluster of peeringEnv.
func peeringPodCIDR(i int) string { return fmt.Sprintf("10.%d.0.0/16", 130+i) }

// peeringEnvStoppable is peeringEnvWith that also returns, by cluster ID, what stops each
// controller manager (startPeeringManager starts it again, with peeringPodCIDR).
func peeringEnvStoppable(t *testing.T, managerArgs []string, ids ...string) (*testenv.Env, map[string]func()) {
	t.Helper()
	bin := managerBinary(t)
	opts := make([]testenv.ClusterOptions, len(ids))
	for i, id := range ids {
		opts[i] = testenv.ClusterOptions{Name: id, ControllerManager: true, PodCIDR: peeringPodCIDR(i),
			Nodes: []testenv.NodeOptions{{Name: id + "-node", CPU: "8", Memory: "16Gi", Pods: "200"}}}
	}
	e := testenv.New(t, opts...)
	stops := map[string]func(){}
	for i, id := range ids {
		stops[id] = startPeeringManager(t, bin, e.Cluster(id), opts[i].PodCIDR, managerArgs...)
	}
	return e, stops
}

// startPeeringManager runs the controller manager binary for a cluster until the test ends, or
// until the function it returns stops it.
func startPeeringManager(t *testing.T, bin string, cl *testenv.Cluster, podCIDR string, args ...string) (stop func()) {
	t.Helper()
	probe := testenv.FreeAddr(t)
	logf, err := os.Create(filepath.Join(t.TempDir(), cl.Name+"-manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig", cl.KubeconfigPath, "--cluster-id", cl.Name, "--pod-cidr", podCIDR,
		"--health-probe-bind-address", probe, "--metrics-bind-address", "0"}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		})
	}
	t.Cleanup(func() {
		stop()
		_ = logf.Close()
		if t.Failed() {
			log, _ := os.ReadFile(logf.Name())
			t.Logf("controller manager of %s, its errors and its last lines before the shutdown:\n%s", cl.Name, testenv.ManagerLogBeforeShutdown(string(log), 40))
		}
	})
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		return testenv.ProbeOK(ctx, probe, "/readyz"), nil
	})
	if err != nil {
		t.Fatalf("controller manager of %s not ready: %v", cl.Name, err)
	}
	return stop
}

// exampleSource returns files of an example folder as one configuration, without the terraform
// block (the in-process provider is served under the default namespace).
func exampleSource(t *testing.T, dir string, files ...string) string {
	t.Helper()
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("..", "examples", dir, f))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteString("\n")
	}
	return regexp.MustCompile(`(?s)terraform \{.*?\n\}\n`).ReplaceAllString(b.String(), "")
}

// peeringLeftovers lists what peerings leave in a cluster: tenant namespaces, Tenants,
// Identities, ResourceSlices, ForeignClusters and virtual nodes.
func peeringLeftovers(ctx context.Context, c client.Client) ([]string, error) {
	var left []string
	nss := &corev1.NamespaceList{}
	if err := c.List(ctx, nss, client.MatchingLabels{consts.TenantNamespaceLabel: "true"}); err != nil {
		return nil, err
	}
	for _, ns := range nss.Items {
		left = append(left, "namespace/"+ns.Name)
	}
	tenants, ids, slices, fcs := &authv1beta1.TenantList{}, &authv1beta1.IdentityList{}, &authv1beta1.ResourceSliceList{}, &corev1beta1.ForeignClusterList{}
	for _, l := range []client.ObjectList{tenants, ids, slices, fcs} {
		if err := c.List(ctx, l); err != nil {
			return nil, err
		}
	}
	for _, t := range tenants.Items {
		left = append(left, "tenant/"+t.Namespace+"/"+t.Name)
	}
	for _, i := range ids.Items {
		left = append(left, "identity/"+i.Namespace+"/"+i.Name)
	}
	for _, s := range slices.Items {
		left = append(left, "resourceslice/"+s.Namespace+"/"+s.Name)
	}
	for _, f := range fcs.Items {
		left = append(left, "foreigncluster/"+f.Name)
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes, client.MatchingLabels{consts.TypeLabel: consts.VirtualNodeType}); err != nil {
		return nil, err
	}
	for _, n := range nodes.Items {
		left = append(left, "node/"+n.Name)
	}
	return left, nil
}

// checkNothingLeft waits (ForeignClusters go once nothing refers to the peer any more) until
// the clusters hold nothing of a peering.
func checkNothingLeft(e *testenv.Env, ids ...string) error {
	clients := map[string]client.Client{}
	for _, id := range ids {
		clients[id] = e.Cluster(id).Client
	}
	return nothingLeft(clients)
}

// nothingLeft is checkNothingLeft for clients by cluster name.
func nothingLeft(clients map[string]client.Client) error {
	return untilNoneLeft(clients, peeringLeftovers)
}

// untilNoneLeft waits up to 30 s until list finds nothing on any of clients (by cluster name).
func untilNoneLeft(clients map[string]client.Client, list func(context.Context, client.Client) ([]string, error)) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for id, c := range clients {
		var left []string
		err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			var err error
			left, err = list(ctx, c)
			return err == nil && len(left) == 0, nil
		})
		if err != nil {
			return fmt.Errorf("left on %s: %v", id, left)
		}
	}
	return nil
}

// checkVirtualNode checks that the consumer has the virtual node, Ready, with the capacity.
func checkVirtualNode(e *testenv.Env, consumer, name string, capacity map[corev1.ResourceName]string) error {
	node := &corev1.Node{}
	if err := e.Cluster(consumer).Client.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
		return fmt.Errorf("virtual node %s on %s: %w", name, consumer, err)
	}
	if node.Labels[consts.TypeLabel] != consts.VirtualNodeType {
		return fmt.Errorf("node %s on %s is not a virtual node: labels %v", name, consumer, node.Labels)
	}
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return fmt.Errorf("virtual node %s on %s is not Ready: %v; the provider's nodes: %s", name, consumer, node.Status.Conditions, nodesReadiness(e, name))
	}
	for res, want := range capacity {
		if got := node.Status.Capacity[res]; got.String() != want {
			return fmt.Errorf("virtual node %s on %s has %s %s, want %s", name, consumer, res, got.String(), want)
		}
	}
	return nil
}

// nodesReadiness lists the nodes of cluster id in e with their Ready conditions, to tell why a
// virtual node standing for it is not Ready.
func nodesReadiness(e *testenv.Env, id string) string {
	c := e.Cluster(id)
	if c == nil {
		return "(no cluster " + id + " in the test bed)"
	}
	nodes := &corev1.NodeList{}
	if err := c.Client.List(context.Background(), nodes); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				fmt.Fprintf(&b, "%s Ready=%s (%s, since %s, heartbeat %s); ", n.Name, cond.Status, cond.Reason,
					cond.LastTransitionTime.UTC().Format(time.TimeOnly), cond.LastHeartbeatTime.UTC().Format(time.TimeOnly))
			}
		}
	}
	return b.String()
}

// peeringClustersBlock is a provider block with the given keys → cluster of e.
func peeringClustersBlock(e *testenv.Env, keys map[string]string) string {
	var b strings.Builder
	b.WriteString("provider \"liqo\" {\n  clusters = {\n")
	for key, id := range keys {
		fmt.Fprintf(&b, "    %q = { config_path = %q }\n", key, e.Cluster(id).KubeconfigPath)
	}
	b.WriteString("  }\n}\n")
	return b.String()
}

func stringValues(m map[string]string) map[string]knownvalue.Check {
	out := map[string]knownvalue.Check{}
	for k, v := range m {
		out[k] = knownvalue.StringExact(v)
	}
	return out
}

// TestAccPeering drives liqo_peering (examples/peering) through the real terraform binary
// against two clusters running the real controller manager, without networking (the test bed
// runs no gateways): bad input fails at plan; a create the provider denies fails with its reason
// and leaves the peering tainted, replaced by the next apply; create ends with a Ready virtual
// node offering the requested resources; a second plan is empty; a new cpu is an in-place update
// re-negotiated with the provider; a change of consumer_cluster or provider_cluster (swapped, or
// either alone) plans a replacement; import reads back the same state; a ResourceSlice deleted out of band is
// planned as an in-place update that asks for it again; a deleted Identity (authentication not up) is planned as an in-place
// repair; destroy leaves nothing on either cluster.
func TestAccPeering(t *testing.T) {
	const cid, pid = "cl-consumer", "cl-provider"
	e := peeringEnv(t, cid, pid)
	example := exampleSource(t, "peering", "main.tf", "variables.tf", "outputs.tf")
	vars := func(cpu string) config.Variables {
		return config.Variables{
			"consumer_kubeconfig": config.StringVariable(e.Cluster(cid).KubeconfigPath),
			"provider_kubeconfig": config.StringVariable(e.Cluster(pid).KubeconfigPath),
			"networking":          config.BoolVariable(false),
			"cpu":                 config.StringVariable(cpu),
			"memory":              config.StringVariable("4Gi"),
			"pods":                config.StringVariable("20"),
		}
	}
	block := peeringClustersBlock(e, map[string]string{"consumer": cid, "provider": pid})
	// The example with other cluster keys: swapped, or one of them a new key of the same
	// cluster (the provider block gets it too).
	const consumerKey, providerKey = `consumer_cluster = "consumer"`, `provider_cluster = "provider"`
	if !strings.Contains(example, consumerKey) || !strings.Contains(example, providerKey) {
		t.Fatalf("examples/peering no longer names its clusters with %s and %s:\n%s", consumerKey, providerKey, example)
	}
	swapped := strings.NewReplacer(consumerKey, `consumer_cluster = "provider"`, providerKey, `provider_cluster = "consumer"`).Replace(example)
	rekeyed := func(attr, key string) string {
		const line = "    provider = { config_path = var.provider_kubeconfig }\n"
		if !strings.Contains(example, line) {
			t.Fatalf("examples/peering no longer has %q in its provider block:\n%s", line, example)
		}
		kubeconfig, old := "var.consumer_kubeconfig", consumerKey
		if attr == "provider_cluster" {
			kubeconfig, old = "var.provider_kubeconfig", providerKey
		}
		src := strings.Replace(example, line, line+fmt.Sprintf("    %s = { config_path = %s }\n", key, kubeconfig), 1)
		return strings.Replace(src, old, fmt.Sprintf("%s = %q", attr, key), 1)
	}
	res := "liqo_peering.this"
	replaced := func(config string) resource.TestStep {
		return resource.TestStep{
			Config: config, ConfigVariables: vars("3"), PlanOnly: true, ExpectNonEmptyPlan: true,
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(res, plancheck.ResourceActionReplace),
			}},
		}
	}
	bad := func(attrs string) string {
		return block + "resource \"liqo_peering\" \"bad\" {\n" + attrs + "\n  networking = false\n}\n"
	}
	at := func(name string) tfjsonpath.Path { return tfjsonpath.New(name) }
	consumerCl := e.Cluster(cid).Client
	deleteAndWait := func(obj client.Object, also ...client.Object) {
		ctx := context.Background()
		if err := consumerCl.Delete(ctx, obj); err != nil {
			t.Fatalf("deleting %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
		}
		for _, o := range append([]client.Object{obj}, also...) {
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				return apierrors.IsNotFound(consumerCl.Get(ctx, client.ObjectKeyFromObject(o), o)), nil
			})
			if err != nil {
				t.Fatalf("%T %s still there: %v", o, client.ObjectKeyFromObject(o), err)
			}
		}
	}
	readyChecks := func(cpu string) []statecheck.StateCheck {
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue(res, at("id"), knownvalue.StringExact("consumer/provider")),
			statecheck.ExpectKnownValue(res, at("consumer_cluster_id"), knownvalue.StringExact(cid)),
			statecheck.ExpectKnownValue(res, at("provider_cluster_id"), knownvalue.StringExact(pid)),
			statecheck.ExpectKnownValue(res, at("consumer_tenant_namespace"), knownvalue.StringExact("liqo-tenant-"+pid)),
			statecheck.ExpectKnownValue(res, at("provider_tenant_namespace"), knownvalue.StringExact("liqo-tenant-"+cid)),
			statecheck.ExpectKnownValue(res, at("virtual_node_name"), knownvalue.StringExact(pid)),
			statecheck.ExpectKnownValue(res, at("granted"), knownvalue.MapExact(stringValues(map[string]string{
				"cpu": cpu, "memory": "4Gi", "pods": "20"}))),
			statecheck.ExpectKnownValue(res, at("status"), knownvalue.ObjectExact(map[string]knownvalue.Check{
				"networking": knownvalue.StringExact("Disabled"), "authentication": knownvalue.StringExact("Established"),
				"offloading": knownvalue.StringExact("Ready")})),
			statecheck.ExpectKnownValue(res, at("gateway"), knownvalue.ObjectExact(map[string]knownvalue.Check{
				"server_location": knownvalue.StringExact("Provider"), "load_balancer_ip": knownvalue.Null(),
				"client_address": knownvalue.Null(), "client_port": knownvalue.Null(),
				"service_type": knownvalue.StringExact("LoadBalancer"), "port": knownvalue.Int64Exact(51840),
				"node_port": knownvalue.Null(), "mtu": knownvalue.Int64Exact(1340)})),
			statecheck.ExpectKnownOutputValue("virtual_node", knownvalue.StringExact(pid)),
		}
	}
	nodeCheck := func(cpu string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			return checkVirtualNode(e, cid, pid, map[corev1.ResourceName]string{"cpu": cpu, "memory": "4Gi", "pods": "20"})
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             func(*terraform.State) error { return checkNothingLeft(e, cid, pid) },
		Steps: []resource.TestStep{
			{
				Config:      bad("  consumer_cluster = \"nope\"\n  provider_cluster = \"provider\"\n  cpu = \"1\"\n  memory = \"1Gi\"\n  pods = \"10\""),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Unknown cluster.*"nope" is not a key of the provider's .clusters. map`),
			},
			{
				Config:      bad("  consumer_cluster = \"consumer\"\n  provider_cluster = \"consumer\"\n  cpu = \"1\"\n  memory = \"1Gi\"\n  pods = \"10\""),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`A cluster cannot peer with itself`),
			},
			{
				Config:      bad("  consumer_cluster = \"consumer\"\n  provider_cluster = \"provider\"\n  cpu = \"two\"\n  memory = \"1Gi\"\n  pods = \"10\""),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Invalid quantity.*"two" is not a Kubernetes quantity`),
			},
			{
				Config:      bad("  consumer_cluster = \"consumer\"\n  provider_cluster = \"provider\"\n  memory = \"1Gi\"\n  pods = \"10\""),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Missing cpu.*cpu is required: set the quantity the consumer asks`),
			},
			{
				// More than the provider shares (half of its node's 8 CPUs): the create fails with
				// the provider's reason, and what was made stays in the state, tainted.
				Config:          example,
				ConfigVariables: vars("64"),
				ExpectError:     regexp.MustCompile(`(?s)denied ResourceSlice.*cpu:\s+asked\s+64,\s+available\s+4.*saved\s+in\s+the\s+state,\s+tainted`),
			},
			{
				// The tainted peering is replaced; the new one ends Ready.
				Config:            example,
				ConfigVariables:   vars("2"),
				ConfigStateChecks: readyChecks("2"),
				Check:             nodeCheck("2"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(res, plancheck.ResourceActionReplace)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			{
				Config:            example,
				ConfigVariables:   vars("3"),
				ConfigStateChecks: readyChecks("3"),
				Check:             nodeCheck("3"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
						plancheck.ExpectUnknownValue(res, at("granted")),
						plancheck.ExpectKnownValue(res, at("virtual_node_name"), knownvalue.StringExact(pid)),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			// The two clusters swapped: a replacement (another peering, in the other direction),
			// planned only; so is a change of consumer_cluster alone (to another key, even of
			// the same cluster) or of provider_cluster alone.
			replaced(swapped),
			replaced(rekeyed("consumer_cluster", "consumer-again")),
			replaced(rekeyed("provider_cluster", "provider-again")),
			{
				Config:                  example,
				ConfigVariables:         vars("3"),
				ResourceName:            res,
				ImportState:             true,
				ImportStateId:           "consumer/provider",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
			{
				// Drift: the consumer's ResourceSlice deleted out of band (its virtual node goes
				// with it): the peering stays in the state (its Tenant and Identity remain) and an
				// in-place update asks for the slice again.
				PreConfig: func() {
					deleteAndWait(&authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-" + pid, Name: pid}},
						&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pid}})
				},
				Config:            example,
				ConfigVariables:   vars("3"),
				ConfigStateChecks: readyChecks("3"),
				Check:             nodeCheck("3"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			{
				// A module not up (the consumer's Identity deleted): an in-place update repairs it.
				PreConfig: func() {
					deleteAndWait(&authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-" + pid, Name: "controlplane-" + pid}})
				},
				Config:            example,
				ConfigVariables:   vars("3"),
				ConfigStateChecks: readyChecks("3"),
				Check:             nodeCheck("3"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
						plancheck.ExpectUnknownValue(res, at("status")),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
		},
	})
}

// TestAccPeeringDeniedUpdate: a re-negotiation the provider denies fails the update with the
// provider's reason and puts the previous request back (the virtual node keeps it); the state
// holds what is granted, so asking for what fits again is an update that applies.
func TestAccPeeringDeniedUpdate(t *testing.T) {
	const cid, pid = "cl-consumer", "cl-provider"
	e := peeringEnv(t, cid, pid)
	example := exampleSource(t, "peering", "main.tf", "variables.tf", "outputs.tf")
	vars := func(cpu string) config.Variables {
		return config.Variables{
			"consumer_kubeconfig": config.StringVariable(e.Cluster(cid).KubeconfigPath),
			"provider_kubeconfig": config.StringVariable(e.Cluster(pid).KubeconfigPath),
			"networking":          config.BoolVariable(false),
			"cpu":                 config.StringVariable(cpu),
			"memory":              config.StringVariable("4Gi"),
			"pods":                config.StringVariable("20"),
		}
	}
	res := "liqo_peering.this"
	nodeCheck := func(cpu string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			return checkVirtualNode(e, cid, pid, map[corev1.ResourceName]string{"cpu": cpu, "memory": "4Gi", "pods": "20"})
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             func(*terraform.State) error { return checkNothingLeft(e, cid, pid) },
		Steps: []resource.TestStep{
			{Config: example, ConfigVariables: vars("2"), Check: nodeCheck("2")},
			{
				// A re-negotiation the provider denies fails the update with its reason.
				Config:          example,
				ConfigVariables: vars("64"),
				ExpectError:     regexp.MustCompile(`(?s)denied ResourceSlice.*cpu:\s+asked\s+64,\s+available\s+4`),
			},
			{
				// The state holds what is granted (the previous request, put back), so asking
				// for what fits again is an update, and the virtual node takes it.
				Config:            example,
				ConfigVariables:   vars("3"),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(res, tfjsonpath.New("granted").AtMapKey("cpu"), knownvalue.StringExact("3"))},
				Check:             nodeCheck("3"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
		},
	})
}

// TestAccPeeringBidirectional applies examples/bidirectional (two liqo_peering in opposite
// directions, created in parallel by terraform), then removes one direction: the other stays
// Ready with its tenant namespaces, and destroy leaves nothing.
func TestAccPeeringBidirectional(t *testing.T) {
	const a, b = "cl-a", "cl-b"
	e := peeringEnv(t, a, b)
	vars := config.Variables{
		"consumer_kubeconfig": config.StringVariable(e.Cluster(a).KubeconfigPath),
		"provider_kubeconfig": config.StringVariable(e.Cluster(b).KubeconfigPath),
		"networking":          config.BoolVariable(false),
	}
	both := exampleSource(t, "bidirectional", "main.tf", "variables.tf", "outputs.tf")
	oneWay := regexp.MustCompile(`(?s)resource "liqo_peering" "consumer_to_provider" \{.*?\n\}\n`).
		ReplaceAllString(exampleSource(t, "bidirectional", "main.tf", "variables.tf"), "")
	if strings.Contains(oneWay, "consumer_to_provider") || !strings.Contains(oneWay, "provider_to_consumer") {
		t.Fatalf("removing one direction from the example failed:\n%s", oneWay)
	}
	caps := map[corev1.ResourceName]string{"cpu": "1", "memory": "2Gi", "pods": "20"}
	ready := func(res string) statecheck.StateCheck {
		return statecheck.ExpectKnownValue(res, tfjsonpath.New("status").AtMapKey("offloading"), knownvalue.StringExact("Ready"))
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             func(*terraform.State) error { return checkNothingLeft(e, a, b) },
		Steps: []resource.TestStep{
			{
				Config:          both,
				ConfigVariables: vars,
				ConfigStateChecks: []statecheck.StateCheck{
					ready("liqo_peering.consumer_to_provider"), ready("liqo_peering.provider_to_consumer"),
					statecheck.ExpectKnownOutputValue("virtual_nodes", knownvalue.ObjectExact(map[string]knownvalue.Check{
						"on_consumer": knownvalue.StringExact(b), "on_provider": knownvalue.StringExact(a)})),
				},
				Check: resource.ComposeTestCheckFunc(
					func(*terraform.State) error { return checkVirtualNode(e, a, b, caps) },
					func(*terraform.State) error { return checkVirtualNode(e, b, a, caps) },
					func(*terraform.State) error { return checkRoles(e, corev1beta1.ConsumerAndProviderRole, a, b) },
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config:          oneWay,
				ConfigVariables: vars,
				ConfigStateChecks: []statecheck.StateCheck{
					ready("liqo_peering.provider_to_consumer"),
					statecheck.ExpectKnownValue("liqo_peering.provider_to_consumer", tfjsonpath.New("status").AtMapKey("authentication"),
						knownvalue.StringExact("Established")),
				},
				Check: resource.ComposeTestCheckFunc(
					func(*terraform.State) error { return checkVirtualNode(e, b, a, caps) },
					func(*terraform.State) error {
						err := e.Cluster(a).Client.Get(context.Background(), client.ObjectKey{Name: b}, &corev1.Node{})
						switch {
						case err == nil:
							return fmt.Errorf("virtual node %s is still on %s after removing that direction", b, a)
						case !apierrors.IsNotFound(err):
							return fmt.Errorf("reading virtual node %s on %s: %w", b, a, err)
						}
						for _, c := range []struct{ on, ns string }{{a, "liqo-tenant-" + b}, {b, "liqo-tenant-" + a}} {
							if err := e.Cluster(c.on).Client.Get(context.Background(), client.ObjectKey{Name: c.ns}, &corev1.Namespace{}); err != nil {
								return fmt.Errorf("tenant namespace %s on %s, used by the remaining direction: %w", c.ns, c.on, err)
							}
						}
						return nil
					},
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("liqo_peering.consumer_to_provider", plancheck.ResourceActionDestroy),
						plancheck.ExpectResourceAction("liqo_peering.provider_to_consumer", plancheck.ResourceActionNoop),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
		},
	})
}

// checkRoles waits until each cluster's ForeignCluster of the other has the role.
func checkRoles(e *testenv.Env, role corev1beta1.RoleType, ids ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range ids {
		var last string
		err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			fcs := &corev1beta1.ForeignClusterList{}
			if err := e.Cluster(id).Client.List(ctx, fcs); err != nil {
				return false, nil //nolint:nilerr // retried
			}
			last = fmt.Sprint(len(fcs.Items), " ForeignClusters")
			for _, fc := range fcs.Items {
				last = fmt.Sprintf("%s: %s", fc.Name, fc.Status.Role)
			}
			return len(fcs.Items) == 1 && fcs.Items[0].Status.Role == role, nil
		})
		if err != nil {
			return fmt.Errorf("ForeignCluster on %s: %s, want role %s", id, last, role)
		}
	}
	return nil
}

// exampleProviderBlock is providerBlock with the example's third key, gpu_provider (the
// provider of its peering on an offer), naming the package's provider cluster too.
func exampleProviderBlock() string {
	return strings.Replace(providerBlock(), "    provider = {",
		fmt.Sprintf("    gpu_provider = { config_path = %q }\n    provider = {", cluster("provider").KubeconfigPath), 1)
}

// TestAccPeeringResourceExample plans the documentation's example of liqo_peering against the
// package's clusters, so that it stays valid as the schema changes.
func TestAccPeeringResourceExample(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "examples", "resources", "liqo_peering", "resource.tf"))
	if err != nil {
		t.Fatal(err)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{{
			Config: exampleProviderBlock() + string(src), PlanOnly: true, ExpectNonEmptyPlan: true,
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("liqo_peering.example", tfjsonpath.New("gateway"), knownvalue.ObjectExact(map[string]knownvalue.Check{
					"server_location": knownvalue.StringExact("Provider"), "load_balancer_ip": knownvalue.Null(),
					"client_address": knownvalue.Null(), "client_port": knownvalue.Null(),
					"service_type": knownvalue.StringExact("NodePort"), "port": knownvalue.Int64Exact(51840),
					"node_port": knownvalue.Int64Exact(30051), "mtu": knownvalue.Int64Exact(1340)})),
				plancheck.ExpectKnownValue("liqo_peering.example", tfjsonpath.New("networking"), knownvalue.Bool(true)),
			}},
		}},
	})
}

// examplesTree copies examples/ into a new folder (module sources are relative paths) and
// returns it with a terraform environment using the built provider through dev_overrides.
func examplesTree(t *testing.T) (string, []string) {
	t.Helper()
	dst := testenv.CopyTerraformTree(t, filepath.Join("..", "examples"))
	rc := filepath.Join(t.TempDir(), "terraformrc")
	overrides := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    %q = %q\n  }\n  direct {}\n}\n",
		strings.TrimPrefix(provider.Address, "registry.terraform.io/"), providerBinary(t))
	if err := os.WriteFile(rc, []byte(overrides), 0o600); err != nil {
		t.Fatal(err)
	}
	return dst, append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TF_ACC=")
}

// tfIn runs terraform in dir, returning its combined output, how long it took, and its exit code.
func tfIn(t *testing.T, dir string, env []string, args ...string) (string, time.Duration, int) {
	t.Helper()
	bin, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatal("terraform is not on PATH: install Terraform >= 1.11")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), took, exit.ExitCode()
		}
		t.Fatalf("terraform %s: %v", args[0], err)
	}
	return string(out), took, 0
}

// tfRunner is tfIn for testenv.ExpectImportsQuiet: output and exit code.
func tfRunner(t *testing.T, env []string) func(dir string, args ...string) (string, int) {
	return func(dir string, args ...string) (string, int) {
		out, _, code := tfIn(t, dir, env, args...)
		return out, code
	}
}

// mustTF runs terraform in dir and fails the test unless it exits 0.
func mustTF(t *testing.T, dir string, env []string, args ...string) (string, time.Duration) {
	t.Helper()
	out, took, code := tfIn(t, dir, env, args...)
	if code != 0 {
		t.Fatalf("terraform %s in %s: exit %d\n%s", strings.Join(args, " "), dir, code, out)
	}
	return out, took
}

// TestPeeringExamplesValidate runs `terraform validate` (and `terraform fmt -check`) with the
// built provider on every example of liqo_peering: peering, peering-options, bidirectional, the fleet module and
// the fleet over three clusters.
func TestPeeringExamplesValidate(t *testing.T) {
	root, env := examplesTree(t)
	for _, dir := range []string{"peering", "peering-options", "bidirectional", "modules/fleet", "fleet", "market"} {
		t.Run(dir, func(t *testing.T) {
			d := filepath.Join(root, dir)
			mustTF(t, d, env, "fmt", "-check", "-diff")
			mustTF(t, d, env, "get") // installs local modules; the provider comes from dev_overrides
			out, _ := mustTF(t, d, env, "validate", "-no-color")
			if !strings.Contains(out, "The configuration is valid") {
				t.Errorf("terraform validate in %s:\n%s", dir, out)
			}
		})
	}
	// The fleet module's own checks of its input.
	t.Run("fleet-hub-not-a-member", func(t *testing.T) {
		d := filepath.Join(root, "fleet")
		out, _, code := tfIn(t, d, env, "plan", "-no-color", "-input=false", "-refresh=false",
			"-var", `kubeconfigs={a="/nonexistent/a", b="/nonexistent/b"}`)
		if code == 0 || !strings.Contains(out, "a hub-and-spoke fleet needs hub set to one of members") {
			t.Errorf("plan with a hub outside the members: exit %d, want the module's validation error:\n%s", code, out)
		}
	})
}

// TestPeeringExamplesCLI applies examples/peering and examples/fleet as a user would, with the
// real terraform CLI and the built provider (dev_overrides), against clusters running the real
// controller manager, without networking; what each applied, imported by ID into an empty
// state, plans no change; it logs how long apply (to Ready virtual nodes), a no-change plan and
// destroy take: issue 7's targets are 15 s, 3 s and 15 s.
func TestPeeringExamplesCLI(t *testing.T) {
	const c, p, p2 = "cl-consumer", "cl-provider", "cl-provider-2"
	e := peeringEnv(t, c, p, p2)
	root, env := examplesTree(t)
	kc := func(id string) string { return e.Cluster(id).KubeconfigPath }

	t.Run("peering", func(t *testing.T) {
		d := filepath.Join(root, "peering")
		args := []string{"-input=false", "-no-color", "-var", "networking=false", "-var", "consumer_kubeconfig=" + kc(c),
			"-var", "provider_kubeconfig=" + kc(p), "-var", "memory=4Gi", "-var", "pods=20"}
		_, apply := mustTF(t, d, env, append([]string{"apply", "-auto-approve", "-var", "cpu=2"}, args...)...)
		if err := checkVirtualNode(e, c, p, map[corev1.ResourceName]string{"cpu": "2", "memory": "4Gi", "pods": "20"}); err != nil {
			t.Fatal(err)
		}
		out, plan, code := tfIn(t, d, env, append([]string{"plan", "-detailed-exitcode", "-var", "cpu=2"}, args...)...)
		if code != 0 {
			t.Errorf("second plan: exit %d, want 0 (no changes):\n%s", code, out)
		}
		testenv.ExpectImportsQuiet(t, root, "peering", filepath.Join(d, "terraform.tfstate"), append([]string{"-var", "cpu=2"}, args[2:]...), nil, tfRunner(t, env))
		out, _, code = tfIn(t, d, env, append([]string{"plan", "-detailed-exitcode", "-var", "cpu=3"}, args...)...)
		if code != 2 || !strings.Contains(out, "1 to change, 0 to destroy") {
			t.Errorf("plan with cpu = 3: exit %d, want an in-place update:\n%s", code, out)
		}
		_, update := mustTF(t, d, env, append([]string{"apply", "-auto-approve", "-var", "cpu=3"}, args...)...)
		if err := checkVirtualNode(e, c, p, map[corev1.ResourceName]string{"cpu": "3"}); err != nil {
			t.Error(err)
		}
		_, destroy := mustTF(t, d, env, append([]string{"destroy", "-auto-approve", "-var", "cpu=3"}, args...)...)
		if err := checkNothingLeft(e, c, p); err != nil {
			t.Error(err)
		}
		t.Logf("examples/peering (terraform CLI): apply to a Ready virtual node %s, no-change plan %s, update cpu %s, destroy %s",
			apply.Round(time.Millisecond), plan.Round(time.Millisecond), update.Round(time.Millisecond), destroy.Round(time.Millisecond))
	})

	kubeconfigs := fmt.Sprintf(`kubeconfigs={consumer=%q, provider=%q, provider-2=%q}`, kc(c), kc(p), kc(p2))
	for _, tc := range []struct {
		topology string
		nodes    map[string][]string // consumer → its virtual nodes
	}{
		{"hub-and-spoke", map[string][]string{c: {p, p2}}},
		{"full-mesh", map[string][]string{c: {p, p2}, p: {c, p2}, p2: {c, p}}},
	} {
		t.Run("fleet-"+tc.topology, func(t *testing.T) {
			d := filepath.Join(root, "fleet")
			mustTF(t, d, env, "get")
			args := []string{"-input=false", "-no-color", "-var", "networking=false", "-var", kubeconfigs, "-var", "topology=" + tc.topology}
			_, apply := mustTF(t, d, env, append([]string{"apply", "-auto-approve"}, args...)...)
			n := 0
			for consumer, nodes := range tc.nodes {
				for _, node := range nodes {
					n++
					if err := checkVirtualNode(e, consumer, node, map[corev1.ResourceName]string{"cpu": "1", "memory": "2Gi", "pods": "20"}); err != nil {
						t.Error(err)
					}
				}
			}
			out, plan, code := tfIn(t, d, env, append([]string{"plan", "-detailed-exitcode"}, args...)...)
			if code != 0 {
				t.Errorf("second plan: exit %d, want 0 (no changes):\n%s", code, out)
			}
			testenv.ExpectImportsQuiet(t, root, "fleet", filepath.Join(d, "terraform.tfstate"), args[2:], nil, tfRunner(t, env))
			_, destroy := mustTF(t, d, env, append([]string{"destroy", "-auto-approve"}, args...)...)
			if err := checkNothingLeft(e, c, p, p2); err != nil {
				t.Error(err)
			}
			t.Logf("examples/fleet %s, %d peerings over 3 clusters (terraform CLI): apply to Ready virtual nodes %s, no-change plan %s, destroy %s",
				tc.topology, n, apply.Round(time.Millisecond), plan.Round(time.Millisecond), destroy.Round(time.Millisecond))
		})
	}
}

// networkedSandbox starts a two-cluster sandbox (`liqo-sandbox up`) whose gateways run in
// network namespaces, for the length of the test, and returns its state folder and admin
// clients of its clusters by name. It skips the test where the gateways cannot run (not root,
// no TUN device, no ip or iptables, another sandbox holding the network's fixed names).
func networkedSandbox(t *testing.T) (string, map[string]client.Client) {
	t.Helper()
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
	bins := providerBinary(t)
	manager := managerBinary(t)
	if out, err := exec.Command("go", "build", "-o", bins+"/", "../cmd/liqo-sandbox", "../cmd/liqo-gateway").CombinedOutput(); err != nil {
		t.Fatalf("building liqo-sandbox and liqo-gateway: %v\n%s", err, out)
	}
	state := filepath.Join(t.TempDir(), "state")
	sb := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(bins, "liqo-sandbox"), append([]string{"-state", state, "-provider-bin", bins,
			"-manager-bin", manager, "-gateway-bin", filepath.Join(bins, "liqo-gateway")}, args...)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if out, err := sb("down"); err != nil {
			t.Errorf("liqo-sandbox down: %v\n%s", err, out)
		}
	})
	out, err := sb("up")
	if err != nil {
		t.Fatalf("liqo-sandbox up: %v\n%s", err, out)
	}
	if strings.Contains(out, "held by another running sandbox") {
		t.Skip("another sandbox started meanwhile and holds the network's fixed names")
	}
	if !strings.Contains(out, "Networking enabled") {
		t.Fatalf("the sandbox runs without gateways:\n%s", out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(state, "logs", "gateway-*.log"))
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				lines := strings.Split(strings.TrimSpace(string(data)), "\n")
				t.Logf("--- %s ---\n%s", filepath.Base(l), strings.Join(lines[max(0, len(lines)-20):], "\n"))
			}
		}
	})
	clients := map[string]client.Client{}
	for _, name := range []string{"consumer", "provider"} {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(state, name+".kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}
		scheme, err := api.NewScheme()
		if err != nil {
			t.Fatal(err)
		}
		if clients[name], err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			t.Fatal(err)
		}
	}
	return state, clients
}

// TestPeeringExampleSandboxNetworking applies examples/peering as written (networking on, a
// LoadBalancer gateway) with the real terraform CLI against the sandbox, which runs the gateways
// in network namespaces when it is root: the tunnel is Established with a latency, the virtual
// node Ready, a second plan is empty, and destroy leaves nothing. It logs the times of apply,
// no-change plan and destroy.
func TestPeeringExampleSandboxNetworking(t *testing.T) {
	state, clients := networkedSandbox(t)
	root, env := examplesTree(t)
	d := filepath.Join(root, "peering")
	args := []string{"-input=false", "-no-color", "-var", "consumer_kubeconfig=" + filepath.Join(state, "consumer.kubeconfig"),
		"-var", "provider_kubeconfig=" + filepath.Join(state, "provider.kubeconfig")}
	_, apply := mustTF(t, d, env, append([]string{"apply", "-auto-approve"}, args...)...)
	status, _ := mustTF(t, d, env, "output", "-json", "status")
	var st map[string]string
	if err := json.Unmarshal([]byte(status), &st); err != nil {
		t.Fatalf("decoding the status output: %v\n%s", err, status)
	}
	want := map[string]string{"networking": "Established", "authentication": "Established", "offloading": "Ready"}
	if !maps.Equal(st, want) {
		t.Errorf("status after apply: %v, want %v (no measurement such as a latency)", st, want)
	}
	node := &corev1.Node{}
	if err := clients["consumer"].Get(t.Context(), client.ObjectKey{Name: "provider"}, node); err != nil {
		t.Errorf("virtual node on the consumer: %v", err)
	}
	out, plan, code := tfIn(t, d, env, append([]string{"plan", "-detailed-exitcode"}, args...)...)
	if code != 0 {
		t.Errorf("second plan: exit %d, want 0 (no changes):\n%s", code, out)
	}
	_, destroy := mustTF(t, d, env, append([]string{"destroy", "-auto-approve"}, args...)...)
	if err := nothingLeft(clients); err != nil {
		t.Error(err)
	}
	t.Logf("examples/peering with networking on the sandbox (terraform CLI): apply to a Ready virtual node and Established tunnel "+
		"%s, no-change plan %s, destroy %s", apply.Round(time.Millisecond), plan.Round(time.Millisecond),
		destroy.Round(time.Millisecond))
}

// TestAccPeeringSandboxGateway drives liqo_peering with networking through the sandbox's
// gateways (run as processes in network namespaces; root only): create waits for the tunnel;
// a new gateway port and MTU is planned as an in-place update (not a replacement) and, once
// applied, the GatewayServer, its endpoint and the GatewayClient carry the new values (the
// client dials the new port), both Connections are Connected, the tunnel interfaces take the
// new MTU and the stand-in pods reach each other through the tunnel; destroy leaves nothing.
func TestAccPeeringSandboxGateway(t *testing.T) {
	state, clients := networkedSandbox(t)
	res := "liqo_peering.this"
	cfg := func(gateway string) string {
		return fmt.Sprintf(`provider "liqo" {
  clusters = {
    consumer = { config_path = %q }
    provider = { config_path = %q }
  }
}

resource "liqo_peering" "this" {
  consumer_cluster = "consumer"
  provider_cluster = "provider"
  cpu              = "2"
  memory           = "4Gi"
  pods             = "20"
%s}
`, filepath.Join(state, "consumer.kubeconfig"), filepath.Join(state, "provider.kubeconfig"), gateway)
	}
	gatewayValue := func(port, mtu int64) knownvalue.Check {
		return knownvalue.ObjectExact(map[string]knownvalue.Check{
			"server_location": knownvalue.StringExact("Provider"), "load_balancer_ip": knownvalue.Null(),
			"client_address": knownvalue.Null(), "client_port": knownvalue.Null(),
			"service_type": knownvalue.StringExact("LoadBalancer"), "port": knownvalue.Int64Exact(port),
			"node_port": knownvalue.Null(), "mtu": knownvalue.Int64Exact(mtu)})
	}
	established := statecheck.ExpectKnownValue(res, tfjsonpath.New("status").AtMapKey("networking"), knownvalue.StringExact("Established"))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             func(*terraform.State) error { return nothingLeft(clients) },
		Steps: []resource.TestStep{
			{
				Config:            cfg(""),
				ConfigStateChecks: []statecheck.StateCheck{established, statecheck.ExpectKnownValue(res, tfjsonpath.New("gateway"), gatewayValue(51840, 1340))},
				Check:             func(*terraform.State) error { return checkSandboxGateways(clients, 51840, 1340) },
			},
			{
				Config: cfg("  gateway = {\n    port = 51841\n    mtu  = 1300\n  }\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(res, tfjsonpath.New("gateway"), gatewayValue(51841, 1300)),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				ConfigStateChecks: []statecheck.StateCheck{established, statecheck.ExpectKnownValue(res, tfjsonpath.New("gateway"), gatewayValue(51841, 1300))},
				Check:             func(*terraform.State) error { return checkSandboxGateways(clients, 51841, 1300) },
			},
		},
	})
}

// checkSandboxGateways checks the tunnel of the sandbox's consumer → provider peering: the
// gateway objects carry port and MTU, the server's endpoint (given to the client) has the port,
// both Connections are Connected, and within seconds each gateway host has one tunnel interface
// with the MTU and the stand-in pods ping each other through the tunnel.
func checkSandboxGateways(clients map[string]client.Client, port int32, mtu int) error {
	ctx := context.Background()
	consumerNS, providerNS := peering.TenantNamespace("provider"), peering.TenantNamespace("consumer")
	gws := &netv1beta1.GatewayServer{}
	if err := clients["provider"].Get(ctx, client.ObjectKey{Namespace: providerNS, Name: "consumer"}, gws); err != nil {
		return fmt.Errorf("GatewayServer on the provider: %w", err)
	}
	if gws.Spec.Endpoint.Port != port || gws.Spec.MTU != mtu {
		return fmt.Errorf("GatewayServer on the provider: port %d, MTU %d, want %d and %d", gws.Spec.Endpoint.Port, gws.Spec.MTU, port, mtu)
	}
	if ep := gws.Status.Endpoint; ep == nil || ep.Port != port || len(ep.Addresses) != 1 || ep.Addresses[0] != sandbox.HostAddress("provider") {
		return fmt.Errorf("GatewayServer endpoint %+v, want %s:%d", gws.Status.Endpoint, sandbox.HostAddress("provider"), port)
	}
	gwc := &netv1beta1.GatewayClient{}
	if err := clients["consumer"].Get(ctx, client.ObjectKey{Namespace: consumerNS, Name: "provider"}, gwc); err != nil {
		return fmt.Errorf("GatewayClient on the consumer: %w", err)
	}
	if gwc.Spec.Endpoint.Port != port || gwc.Spec.MTU != mtu {
		return fmt.Errorf("GatewayClient on the consumer: endpoint port %d, MTU %d, want %d and %d", gwc.Spec.Endpoint.Port, gwc.Spec.MTU, port, mtu)
	}
	// Named templates, as upstream's gateway operators need them (ours read none as the default).
	if gws.Spec.ServerTemplateRef.Name != workload.ServerTemplateName || gwc.Spec.ClientTemplateRef.Name != workload.ClientTemplateName {
		return fmt.Errorf("template references %+v and %+v, want the default templates %s and %s", gws.Spec.ServerTemplateRef,
			gwc.Spec.ClientTemplateRef, workload.ServerTemplateName, workload.ClientTemplateName)
	}
	for _, c := range []struct{ cluster, ns string }{{"consumer", consumerNS}, {"provider", providerNS}} {
		conns := &netv1beta1.ConnectionList{}
		if err := clients[c.cluster].List(ctx, conns, client.InNamespace(c.ns)); err != nil {
			return err
		}
		if len(conns.Items) != 1 || conns.Items[0].Status.Value != netv1beta1.Connected {
			return fmt.Errorf("Connections in %s on %s: %+v, want one Connected", c.ns, c.cluster, conns.Items)
		}
	}
	// The gateway processes pick the new values up from the objects on their own, just after
	// the apply returns: the tunnels get the MTU and carry traffic again within seconds.
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		last = tunnelsCarry(mtu)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("15 s after the apply: %w", last)
	}
	return nil
}

// tunnelsCarry checks that each sandbox gateway host has one tunnel interface (a TUN device),
// with the MTU, and that the stand-in pods ping each other through it.
func tunnelsCarry(mtu int) error {
	for _, cluster := range []string{"consumer", "provider"} {
		out, err := exec.Command("ip", "-n", sandbox.HostNetns(cluster), "-o", "link", "show", "type", "tun").CombinedOutput()
		if err != nil {
			return fmt.Errorf("listing the tunnels in %s: %w: %s", sandbox.HostNetns(cluster), err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], fmt.Sprintf(" mtu %d ", mtu)) {
			return fmt.Errorf("tunnel interfaces in %s: %q, want one with MTU %d", sandbox.HostNetns(cluster), out, mtu)
		}
	}
	for _, dir := range [][2]string{{"consumer", "provider"}, {"provider", "consumer"}} {
		if _, err := nsping.Ping(sandbox.PodNetns(dir[0]), sandbox.PodAddress(dir[1]), 3); err != nil {
			return fmt.Errorf("pod-to-pod through the tunnel, %s's pod to %s's (%s): %w", dir[0], dir[1], sandbox.PodAddress(dir[1]), err)
		}
	}
	return nil
}
