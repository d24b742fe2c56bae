package provider_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// peeringDebris lists everything of a peering on one cluster, by kind: what peeringLeftovers
// lists (tenant namespaces, Terminating ones too, Tenants, Identities, ResourceSlices,
// ForeignClusters, virtual nodes), and, in tenant namespaces or labelled with a peer's ID, the
// network (Configurations, GatewayServers, GatewayClients, PublicKeys, Connections, Networks),
// the gateways' Deployments and Services, Secrets (nonce, signed nonce, keys, kubeconfigs) and
// NamespaceMaps.
func peeringDebris(ctx context.Context, c client.Client) ([]string, error) {
	left, err := peeringLeftovers(ctx, c)
	if err != nil {
		return nil, err
	}
	for kind, l := range map[string]client.ObjectList{
		"configuration": &netv1beta1.ConfigurationList{}, "gatewayserver": &netv1beta1.GatewayServerList{},
		"gatewayclient": &netv1beta1.GatewayClientList{}, "publickey": &netv1beta1.PublicKeyList{},
		"connection": &netv1beta1.ConnectionList{}, "network": &ipamv1alpha1.NetworkList{},
		"deployment": &appsv1.DeploymentList{}, "service": &corev1.ServiceList{}, "secret": &corev1.SecretList{},
		"namespacemap": &offv1beta1.NamespaceMapList{},
	} {
		if err := c.List(ctx, l); err != nil {
			return nil, fmt.Errorf("listing %ss: %w", kind, err)
		}
		objs, err := meta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			obj, ok := o.(client.Object)
			if !ok {
				continue
			}
			if strings.HasPrefix(obj.GetNamespace(), consts.TenantNamespacePrefix) || obj.GetLabels()[consts.RemoteClusterIDLabel] != "" {
				left = append(left, kind+"/"+obj.GetNamespace()+"/"+obj.GetName())
			}
		}
	}
	return left, nil
}

// checkNoDebris waits (ForeignClusters go once nothing refers to the peer, namespaces once
// emptied) until none of the clusters of e named holds anything of a peering (peeringDebris).
func checkNoDebris(e *testenv.Env, ids ...string) error {
	clients := map[string]client.Client{}
	for _, id := range ids {
		clients[id] = e.Cluster(id).Client
	}
	return untilNoneLeft(clients, peeringDebris)
}

// peeringTF is a configuration of liqo_peering resources for the terraform CLI: the provider
// block (keys consumer and provider: the clusters a and b of e) and the resources.
func peeringTF(e *testenv.Env, a, b string, resources ...string) string {
	return requiredProvidersBlock + peeringClustersBlock(e, map[string]string{"consumer": a, "provider": b}) + strings.Join(resources, "\n")
}

// peeringHCL is a liqo_peering named name of consumer key c with provider key p, asking for one
// CPU, with networking on or off and the create timeout.
func peeringHCL(name, c, p string, networking bool, createTimeout string) string {
	return fmt.Sprintf(`resource "liqo_peering" %q {
  consumer_cluster = %q
  provider_cluster = %q
  networking       = %t
  cpu              = "1"
  memory           = "2Gi"
  pods             = "10"
  timeouts {
    create = %q
  }
}
`, name, c, p, networking, createTimeout)
}

// tfTimed runs terraform in d and returns its exit code, its output on one line, and how long
// it took.
func tfTimed(t *testing.T, d *terraformDir, args ...string) (int, string, time.Duration) {
	t.Helper()
	start := time.Now()
	code, out := d.exitCode(t, append(args, "-input=false", "-no-color")...)
	return code, oneLine(out), time.Since(start)
}

// expectFailedCreate applies d, which must fail with the reason want and save what it made,
// tainted; the next plan must still hold the peering res, tainted and planned for replacement.
// It returns the times of the apply and the plan.
func expectFailedCreate(t *testing.T, d *terraformDir, res string, want *regexp.Regexp) (time.Duration, time.Duration) {
	t.Helper()
	code, out, apply := tfTimed(t, d, "apply", "-auto-approve")
	if code != 1 || !want.MatchString(out) || !strings.Contains(out, "What was made is saved in the state, tainted") {
		t.Fatalf("apply: exit %d, want 1 with %q and the peering saved tainted:\n%s", code, want, out)
	}
	code, out, plan := tfTimed(t, d, "plan", "-detailed-exitcode")
	if code != 2 || !strings.Contains(out, res+" is tainted, so must be replaced") || !strings.Contains(out, "1 to add, 0 to change, 1 to destroy") {
		t.Fatalf("plan after the failed create: exit %d, want %s tainted and planned for replacement:\n%s", code, res, out)
	}
	return apply, plan
}

// expectDestroyed destroys d (with args), which must report n destroyed, and checks that
// nothing of a peering remains on the clusters ids of e. It returns the time of the destroy.
func expectDestroyed(t *testing.T, d *terraformDir, e *testenv.Env, n int, ids []string, args ...string) time.Duration {
	t.Helper()
	code, out, took := tfTimed(t, d, append([]string{"destroy", "-auto-approve"}, args...)...)
	if want := fmt.Sprintf("Resources: %d destroyed.", n); code != 0 || !strings.Contains(out, want) {
		t.Fatalf("destroy: exit %d, want %q:\n%s", code, want, out)
	}
	if err := checkNoDebris(e, ids...); err != nil {
		t.Fatal(err)
	}
	return took
}

// debrisOf fails the test unless the cluster id of e holds each of the objects named (by
// peeringDebris) before the destroy: the failed create made them.
func debrisOf(t *testing.T, e *testenv.Env, id string, want ...string) {
	t.Helper()
	left, err := peeringDebris(context.Background(), e.Cluster(id).Client)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("on %s after the failed create: %v", id, left)
	for _, w := range want {
		found := false
		for _, l := range left {
			found = found || l == w
		}
		if !found {
			t.Errorf("%s is not on %s after the failed create (it holds %v)", w, id, left)
		}
	}
}

// TestPeeringFailedCreateLeavesNothing: a create that stops before the peering is whole stays in
// the state, tainted, until destroy removes what it made (issue 31, item 4), with the real
// terraform CLI against clusters running the real controller manager:
//   - networking on, the gateway server's LoadBalancer never getting an address (the test bed
//     has no load balancer): the create times out in the network; the tenant namespaces,
//     Configurations, Networks, GatewayServer with its Deployment and Service are there;
//   - the provider's controller manager stopped: the create times out waiting for the nonce;
//     destroy runs with it still stopped, and nothing comes back once it runs again;
//   - a bidirectional peering whose second direction stops before authentication (its
//     provider's controller manager stopped): it is kept by its nonce request alone (the tenant
//     namespaces serve the first direction); destroying it leaves the first Ready with the
//     tenant namespaces and removes the second's own objects, and creating it again (the other
//     direction there) is not refused.
//
// Each time the next plan still holds the peering, tainted and planned for replacement, and
// destroy reports it destroyed and leaves nothing of it on either cluster.
func TestPeeringFailedCreateLeavesNothing(t *testing.T) {
	const a, b = "fc-a", "fc-b"
	e, stops := peeringEnvStoppable(t, nil, a, b)
	one := func(networking bool, timeout string) string {
		return peeringTF(e, a, b, peeringHCL("this", "consumer", "provider", networking, timeout))
	}
	caps := map[corev1.ResourceName]string{"cpu": "1", "memory": "2Gi", "pods": "10"}
	outer := t

	t.Run("network-timeout", func(t *testing.T) {
		d := newTerraformDir(t, tfSource(t, one(true, "20s")))
		apply, plan := expectFailedCreate(t, d, "liqo_peering.this", regexp.MustCompile(`GatewayServer \S+ on cluster "provider" to report its endpoint`))
		debrisOf(t, e, b, "namespace/liqo-tenant-"+a, "foreigncluster/"+a, "configuration/liqo-tenant-"+a+"/"+a,
			"gatewayserver/liqo-tenant-"+a+"/"+a, "deployment/liqo-tenant-"+a+"/gw-"+a, "service/liqo-tenant-"+a+"/gw-"+a,
			"network/liqo-tenant-"+a+"/"+a+"-pod-10-130-0-0-16")
		debrisOf(t, e, a, "namespace/liqo-tenant-"+b, "foreigncluster/"+b, "configuration/liqo-tenant-"+b+"/"+b)
		destroy := expectDestroyed(t, d, e, 1, []string{a, b})
		t.Logf("create stopped in the network: failed apply %s, plan %s, destroy %s", apply.Round(time.Millisecond),
			plan.Round(time.Millisecond), destroy.Round(time.Millisecond))
	})

	t.Run("provider-manager-down", func(t *testing.T) {
		stops[b]()
		d := newTerraformDir(t, tfSource(t, one(false, "10s")))
		apply, plan := expectFailedCreate(t, d, "liqo_peering.this", regexp.MustCompile(`the nonce liqo-tenant-`+a+`/\S+ on cluster "provider"`))
		debrisOf(t, e, b, "namespace/liqo-tenant-"+a, "secret/liqo-tenant-"+a+"/"+consts.NonceSecret)
		debrisOf(t, e, a, "namespace/liqo-tenant-"+b, "foreigncluster/"+b)
		destroy := expectDestroyed(t, d, e, 1, []string{a, b})
		// Running again (for the rest of the test), the manager would at once make something of a leftover.
		stops[b] = startPeeringManager(outer, managerBinary(t), e.Cluster(b), peeringPodCIDR(1))
		time.Sleep(2 * time.Second)
		if err := checkNoDebris(e, a, b); err != nil {
			t.Errorf("once the provider's controller manager runs again: %v", err)
		}
		t.Logf("create stopped before authentication: failed apply %s, plan %s, destroy (the provider's manager down) %s",
			apply.Round(time.Millisecond), plan.Round(time.Millisecond), destroy.Round(time.Millisecond))
	})

	t.Run("bidirectional", func(t *testing.T) {
		reverse := peeringHCL("provider_to_consumer", "provider", "consumer", false, "2m")
		forward := func(timeout string) string {
			return peeringHCL("consumer_to_provider", "consumer", "provider", false, timeout)
		}
		d := newTerraformDir(t, tfSource(t, peeringTF(e, a, b, reverse)))
		d.run(t, "apply", "-auto-approve", "-input=false", "-no-color")
		// The second direction's provider (b) does not answer its nonce request: it stops
		// before authentication, having made its nonce request only (the tenant namespaces are
		// the first direction's).
		stops[b]()
		if err := os.WriteFile(filepath.Join(d.dir, "main.tf"), []byte(peeringTF(e, a, b, reverse, forward("5s"))), 0o600); err != nil {
			t.Fatal(err)
		}
		apply, plan := expectFailedCreate(t, d, "liqo_peering.consumer_to_provider", regexp.MustCompile(`the nonce liqo-tenant-`+a+`/\S+ on cluster "provider"`))
		stops[b] = startPeeringManager(outer, managerBinary(t), e.Cluster(b), peeringPodCIDR(1))
		if err := os.WriteFile(filepath.Join(d.dir, "main.tf"), []byte(peeringTF(e, a, b, reverse)), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, destroy := tfTimed(t, d, "apply", "-auto-approve")
		if code != 0 || !strings.Contains(out, "0 added, 0 changed, 1 destroyed") {
			t.Fatalf("apply without the failed direction: exit %d, want it destroyed:\n%s", code, out)
		}
		var last error
		err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			last = checkVirtualNode(e, b, a, caps) // Ready again once b's manager runs again
			return last == nil, nil
		})
		if err != nil {
			t.Errorf("the other direction after destroying the failed one: %v", last)
		}
		t.Logf("second direction stopped before authentication: failed apply %s, plan %s, destroy of that direction %s",
			apply.Round(time.Millisecond), plan.Round(time.Millisecond), destroy.Round(time.Millisecond))
		ctx := context.Background()
		for _, o := range []struct {
			on  string
			obj client.Object
		}{
			{a, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-" + b}}},
			{b, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-" + a}}},
		} {
			if err := e.Cluster(o.on).Client.Get(ctx, client.ObjectKeyFromObject(o.obj), o.obj); err != nil || o.obj.GetDeletionTimestamp() != nil {
				t.Errorf("tenant namespace %s on %s, which the other direction uses: %v (deleting: %v)", o.obj.GetName(), o.on, err, o.obj.GetDeletionTimestamp())
			}
		}
		for _, o := range []struct {
			on  string
			obj client.Object
		}{
			{b, &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-" + a, Name: a}}},
			{b, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-" + a, Name: consts.NonceSecret}}},
			{a, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-" + b, Name: consts.SignedNonceSecret}}},
			{a, &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-" + b, Name: "controlplane-" + b}}},
			{a, &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-" + b, Name: b}}},
		} {
			if err := e.Cluster(o.on).Client.Get(ctx, client.ObjectKeyFromObject(o.obj), o.obj); !apierrors.IsNotFound(err) {
				t.Errorf("%T %s on %s of the destroyed direction: %v, want it gone", o.obj, client.ObjectKeyFromObject(o.obj), o.on, err)
			}
		}
		// Created again beside the other direction (which shares its tenant namespaces): not refused.
		if err := os.WriteFile(filepath.Join(d.dir, "main.tf"), []byte(peeringTF(e, a, b, reverse, forward("2m"))), 0o600); err != nil {
			t.Fatal(err)
		}
		d.run(t, "apply", "-auto-approve", "-input=false", "-no-color")
		for _, n := range [][2]string{{a, b}, {b, a}} {
			if err := checkVirtualNode(e, n[0], n[1], caps); err != nil {
				t.Error(err)
			}
		}
		expectDestroyed(t, d, e, 2, []string{a, b})
	})
}

// TestPeeringTakeoverRefused: a second Terraform state creating the peering of a pair that
// already peers in that direction is refused at create, naming what exists, with both import
// forms (issue 31, item 5), with the real terraform CLI against clusters running the real
// controller manager. The first peering's Tenant, Identity and ResourceSlice are untouched (same
// resource versions, the grant unchanged) by the refused apply and by the second state's
// destroy; the import command the message gives brings the peering into the second state with
// no change to plan, and so does the import block it gives.
func TestPeeringTakeoverRefused(t *testing.T) {
	const cid, pid = "to-consumer", "to-provider"
	e := peeringEnv(t, cid, pid)
	src := tfSource(t, peeringTF(e, cid, pid, `variable "cpu" {
  type = string
}

resource "liqo_peering" "this" {
  consumer_cluster = "consumer"
  provider_cluster = "provider"
  networking       = false
  cpu              = var.cpu
  memory           = "2Gi"
  pods             = "10"
}
`))
	first, second := newTerraformDir(t, src), newTerraformDir(t, src)
	first.run(t, "apply", "-auto-approve", "-input=false", "-no-color", "-var", "cpu=2")
	caps := map[corev1.ResourceName]string{"cpu": "2", "memory": "2Gi", "pods": "10"}
	if err := checkVirtualNode(e, cid, pid, caps); err != nil {
		t.Fatal(err)
	}
	marks := []struct {
		on  string
		obj client.Object
	}{
		{pid, &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-" + cid, Name: cid}}},
		{cid, &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-" + pid, Name: "controlplane-" + pid}}},
		{cid, &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-" + pid, Name: pid}}},
	}
	versions := func() []string {
		var out []string
		for _, m := range marks {
			if err := e.Cluster(m.on).Client.Get(context.Background(), client.ObjectKeyFromObject(m.obj), m.obj); err != nil {
				t.Fatalf("%T %s on %s: %v", m.obj, client.ObjectKeyFromObject(m.obj), m.on, err)
			}
			out = append(out, fmt.Sprintf("%T %s", m.obj, m.obj.GetResourceVersion()))
		}
		return out
	}
	firstHolds := true // until the first state lets the peering go, for the import
	unchanged := func(when string, before []string) {
		t.Helper()
		if after := versions(); strings.Join(after, ",") != strings.Join(before, ",") {
			t.Errorf("%s: the first peering's objects changed: %v, were %v", when, after, before)
		}
		if err := checkVirtualNode(e, cid, pid, caps); err != nil {
			t.Errorf("%s: %v", when, err)
		}
		if !firstHolds {
			return
		}
		if code, out, _ := tfTimed(t, first, "plan", "-detailed-exitcode", "-var", "cpu=2"); code != 0 {
			t.Errorf("%s: the first state's plan: exit %d, want no change:\n%s", when, code, out)
		}
	}
	before := versions()

	// The plan cannot see it (it plans the create of a replacement while the old object still
	// exists); the create refuses it.
	if code, out, _ := tfTimed(t, second, "plan", "-detailed-exitcode", "-var", "cpu=3"); code != 2 || !strings.Contains(out, "1 to add") {
		t.Fatalf("the second state's plan: exit %d, want a create:\n%s", code, out)
	}
	start := time.Now()
	code, raw := second.exitCode(t, "apply", "-auto-approve", "-input=false", "-no-color", "-var", "cpu=3")
	refused := time.Since(start)
	out := oneLine(raw)
	for _, want := range []string{
		`The peering of consumer "consumer" with provider "provider" exists already`,
		`Tenant liqo-tenant-` + cid + `/` + cid + ` on cluster "provider"`,
		`Identity liqo-tenant-` + pid + `/controlplane-` + pid + ` on cluster "consumer"`,
		`ResourceSlice liqo-tenant-` + pid + `/` + pid + ` on cluster "consumer"`,
		"terraform import liqo_peering.<name> consumer/provider",
		`import { to = liqo_peering.<name> identity = { consumer_cluster = "consumer" provider_cluster = "provider" } }`,
	} {
		if code != 1 || !strings.Contains(out, want) {
			t.Fatalf("the second state's apply: exit %d, want 1 with %q:\n%s", code, want, out)
		}
	}
	unchanged("after the refused create", before)
	if list := second.run(t, "state", "list"); strings.TrimSpace(list) != "" {
		t.Errorf("the second state after the refused create holds %q, want nothing", list)
	}
	if code, out, _ := tfTimed(t, second, "destroy", "-auto-approve", "-var", "cpu=3"); code != 0 || !strings.Contains(out, "Resources: 0 destroyed.") {
		t.Errorf("the second state's destroy: exit %d, want nothing destroyed:\n%s", code, out)
	}
	unchanged("after the second state's destroy", before)

	// The import command of the message, once the first state lets the peering go.
	cmd := regexp.MustCompile(`terraform import (liqo_peering\.<name>) (\S+)`).FindStringSubmatch(out)
	first.run(t, "state", "rm", "liqo_peering.this")
	firstHolds = false
	second.run(t, "import", "-input=false", "-no-color", "-var", "cpu=2", strings.Replace(cmd[1], "<name>", "this", 1), cmd[2])
	if code, out, _ := tfTimed(t, second, "plan", "-detailed-exitcode", "-var", "cpu=2"); code != 0 {
		t.Errorf("plan after importing with %q: exit %d, want no change:\n%s", cmd[0], code, out)
	}
	// The import block of the message, as it is written there.
	block := importBlockIn(t, raw)
	second.run(t, "state", "rm", "liqo_peering.this")
	if err := os.WriteFile(filepath.Join(second.dir, "import.tf"), []byte(strings.ReplaceAll(block, "<name>", "this")), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := tfTimed(t, second, "plan", "-detailed-exitcode", "-var", "cpu=2"); !strings.Contains(out, "1 to import, 0 to add, 0 to change, 0 to destroy") {
		t.Errorf("plan with the import block:\n%s\nexit %d, want only the import:\n%s", block, code, out)
	}
	second.run(t, "apply", "-auto-approve", "-input=false", "-no-color", "-var", "cpu=2")
	if code, out, _ := tfTimed(t, second, "plan", "-detailed-exitcode", "-var", "cpu=2"); code != 0 {
		t.Errorf("plan after the import block: exit %d, want no change:\n%s", code, out)
	}
	unchanged("after both imports", before)
	expectDestroyed(t, second, e, 1, []string{cid, pid}, "-var", "cpu=2")
	t.Logf("a second state's create of the same peering refused in %s:\n%s", refused.Round(time.Millisecond), raw[strings.Index(raw, "Error:"):])
}

// importBlockIn is the import block of a refused create's message, as terraform printed it.
func importBlockIn(t *testing.T, out string) string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimPrefix(strings.TrimPrefix(l, "│"), " ")
		switch {
		case len(lines) == 0 && strings.TrimSpace(l) == "import {":
			lines = append(lines, l)
		case len(lines) > 0:
			lines = append(lines, l)
			if l == lines[0][:len(lines[0])-len("import {")]+"}" {
				return strings.Join(lines, "\n") + "\n"
			}
		}
	}
	t.Fatalf("no import block in:\n%s", out)
	return ""
}
