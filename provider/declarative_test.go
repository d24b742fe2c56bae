package provider_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// declarativeExample returns examples/declarative as one configuration, without its terraform
// block (the tests serve the provider in-process under the default namespace).
func declarativeExample(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, f := range []string{"main.tf", "variables.tf"} {
		data, err := os.ReadFile(filepath.Join("..", "examples", "declarative", f))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteString("\n")
	}
	return regexp.MustCompile(`(?s)terraform \{.*?\n\}\n`).ReplaceAllString(b.String(), "")
}

// asClustersMap rewrites the two-alias example into one provider block with a clusters map.
func asClustersMap(src string) string {
	src = regexp.MustCompile(`(?s)provider "liqo" \{\n  alias\s+= "(consumer|provider)"\n  config_path = var\.(consumer|provider)_kubeconfig\n\}\n`).
		ReplaceAllString(src, "")
	src = regexp.MustCompile(`provider(\s+)= liqo\.(consumer|provider)`).ReplaceAllString(src, `cluster$1= "$2"`)
	return `provider "liqo" {
  clusters = {
    consumer = { config_path = var.consumer_kubeconfig }
    provider = { config_path = var.provider_kubeconfig }
  }
}
` + src
}

// count lists objects of a kind in a test cluster matching the labels (and namespace if set).
func count(ctx context.Context, clusterName string, list client.ObjectList, ns string, labels map[string]string) (int, error) {
	opts := []client.ListOption{client.MatchingLabels(labels)}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := cluster(clusterName).Client.List(ctx, list, opts...); err != nil {
		return 0, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return 0, fmt.Errorf("reading list: %w", err)
	}
	return len(items), nil
}

// checkDeclarativePeering checks where every object of the seed-003 flow landed.
func checkDeclarativePeering(cid, pid, offloaded string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		onCons, onProv := "liqo-tenant-"+pid, "liqo-tenant-"+cid
		forProv := map[string]string{consts.RemoteClusterIDLabel: pid}
		forCons := map[string]string{consts.RemoteClusterIDLabel: cid}
		cases := []struct {
			where, what string
			list        client.ObjectList
			ns          string
			labels      map[string]string
			want        int
		}{
			{"consumer", "tenant namespace", &corev1.NamespaceList{}, "", map[string]string{consts.RemoteClusterIDLabel: pid, consts.TenantNamespaceLabel: "true"}, 1},
			{"provider", "tenant namespace", &corev1.NamespaceList{}, "", map[string]string{consts.RemoteClusterIDLabel: cid, consts.TenantNamespaceLabel: "true"}, 1},
			{"consumer", "Configuration", &netv1beta1.ConfigurationList{}, onCons, forProv, 1},
			{"provider", "Configuration", &netv1beta1.ConfigurationList{}, onProv, forCons, 1},
			{"consumer", "key Secret", &corev1.SecretList{}, onCons, map[string]string{consts.RemoteClusterIDLabel: pid, consts.GatewayResourceLabel: "true"}, 1},
			{"provider", "key Secret", &corev1.SecretList{}, onProv, map[string]string{consts.RemoteClusterIDLabel: cid, consts.GatewayResourceLabel: "true"}, 1},
			{"consumer", "PublicKey", &netv1beta1.PublicKeyList{}, onCons, forProv, 1},
			{"provider", "PublicKey", &netv1beta1.PublicKeyList{}, onProv, forCons, 1},
			{"provider", "GatewayServer", &netv1beta1.GatewayServerList{}, onProv, forCons, 1},
			{"consumer", "GatewayServer", &netv1beta1.GatewayServerList{}, onProv, nil, 0},
			{"consumer", "GatewayClient", &netv1beta1.GatewayClientList{}, onCons, forProv, 1},
			{"provider", "GatewayClient", &netv1beta1.GatewayClientList{}, onCons, nil, 0},
			{"provider", "Tenant", &authv1beta1.TenantList{}, onProv, nil, 1},
			{"consumer", "Tenant", &authv1beta1.TenantList{}, onProv, nil, 0},
			{"consumer", "Identity", &authv1beta1.IdentityList{}, onCons, nil, 1},
			{"consumer", "identity kubeconfig Secret", &corev1.SecretList{}, onCons, map[string]string{consts.IdentityTypeLabel: "ControlPlane", consts.RemoteClusterIDLabel: pid}, 1},
			{"provider", "Identity", &authv1beta1.IdentityList{}, onCons, nil, 0},
			{"consumer", "ResourceSlice", &authv1beta1.ResourceSliceList{}, onCons, forProv, 1},
			{"provider", "ResourceSlice", &authv1beta1.ResourceSliceList{}, onCons, nil, 0},
			{"consumer", "NamespaceOffloading", &offv1beta1.NamespaceOffloadingList{}, offloaded, nil, 1},
			{"provider", "NamespaceOffloading", &offv1beta1.NamespaceOffloadingList{}, offloaded, nil, 0},
		}
		for _, c := range cases {
			n, err := count(ctx, c.where, c.list, c.ns, c.labels)
			if err != nil {
				return fmt.Errorf("listing %s on %s: %w", c.what, c.where, err)
			}
			if n != c.want {
				return fmt.Errorf("%d %s on the %s cluster (namespace %q, labels %v), want %d", n, c.what, c.where, c.ns, c.labels, c.want)
			}
		}
		return nil
	}
}

// declarativeVars are the example's variables for one run.
func declarativeVars(cid, pid, offloaded string) map[string]string {
	return map[string]string{
		"consumer_kubeconfig": cluster("consumer").KubeconfigPath,
		"provider_kubeconfig": cluster("provider").KubeconfigPath,
		"consumer_cluster_id": cid,
		"provider_cluster_id": pid,
		"offloaded_namespace": offloaded,
	}
}

// createNamespace makes the namespace the example offloads.
func createNamespace(t *testing.T, clusterName, name string) {
	t.Helper()
	if err := cluster(clusterName).Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// TestAccDeclarativePeeringClustersMap applies seed 003's declarative peering
// (examples/declarative) rewritten to use one provider block's clusters map.
func TestAccDeclarativePeeringClustersMap(t *testing.T) {
	cid, pid, offloaded := "cl-cons-map", "cl-prov-map", "demo-map"
	createNamespace(t, "consumer", offloaded)
	src := asClustersMap(declarativeExample(t))
	if strings.Contains(src, "liqo.consumer") || regexp.MustCompile(`\balias\s*=`).MatchString(src) {
		t.Fatalf("rewrite left aliases:\n%s", src)
	}
	vars := config.Variables{}
	for k, v := range declarativeVars(cid, pid, offloaded) {
		vars[k] = config.StringVariable(v)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: func(s *terraform.State) error {
			if err := checkNamespaceGone("consumer", "liqo-tenant-"+pid)(s); err != nil {
				return err
			}
			return checkNamespaceGone("provider", "liqo-tenant-"+cid)(s)
		},
		Steps: []resource.TestStep{{
			Config:          src,
			ConfigVariables: vars,
			Check:           checkDeclarativePeering(cid, pid, offloaded),
		}},
	})
}

// TestDeclarativePeeringAliases applies examples/declarative as written, with two provider
// aliases, through the real terraform CLI and the built provider binary (dev_overrides): each
// alias runs in its own plugin process, as in real use (the test framework's in-process server
// would serve both aliases from one configured instance). Then a plan shows no change, and
// destroy removes everything.
func TestDeclarativePeeringAliases(t *testing.T) {
	cid, pid, offloaded := "cl-cons-alias", "cl-prov-alias", "demo-alias"
	createNamespace(t, "consumer", offloaded)
	tf := newTerraformDir(t, filepath.Join("..", "examples", "declarative"))
	var args []string
	for k, v := range declarativeVars(cid, pid, offloaded) {
		args = append(args, "-var", k+"="+v)
	}
	tf.run(t, append([]string{"apply", "-auto-approve", "-input=false"}, args...)...)
	if err := checkDeclarativePeering(cid, pid, offloaded)(nil); err != nil {
		t.Error(err)
	}
	if code, out := tf.exitCode(t, append([]string{"plan", "-detailed-exitcode", "-input=false"}, args...)...); code != 0 {
		t.Errorf("second plan exit code %d, want 0 (no changes):\n%s", code, out)
	}
	checkNoSecretsRendered(t, tf, args, cid, pid)
	tf.run(t, append([]string{"destroy", "-auto-approve", "-input=false"}, args...)...)
	for _, c := range []struct{ where, ns string }{{"consumer", "liqo-tenant-" + pid}, {"provider", "liqo-tenant-" + cid}} {
		if err := checkNamespaceGone(c.where, c.ns)(nil); err != nil {
			t.Error(err)
		}
	}
}

// checkNoSecretsRendered reads the secrets the peering put in the clusters (both gateways'
// private keys, the client key of the consumer's identity) and checks that none of them shows
// in the rendered plan of a destroy (which lists every attribute) or in `terraform show`, and
// that the private keys are not even in the state.
func checkNoSecretsRendered(t *testing.T, tf *terraformDir, args []string, cid, pid string) {
	t.Helper()
	ctx := t.Context()
	var secrets []string
	for _, c := range []struct{ where, ns string }{{"consumer", "liqo-tenant-" + pid}, {"provider", "liqo-tenant-" + cid}} {
		list := &corev1.SecretList{}
		if err := cluster(c.where).Client.List(ctx, list, client.InNamespace(c.ns), client.MatchingLabels{consts.GatewayResourceLabel: "true"}); err != nil || len(list.Items) != 1 {
			t.Fatalf("key Secret on %s: %v (%d found)", c.where, err, len(list.Items))
		}
		secrets = append(secrets, base64.StdEncoding.EncodeToString(list.Items[0].Data[consts.PrivateKeySecretKey]))
	}
	ids := &corev1.SecretList{}
	if err := cluster("consumer").Client.List(ctx, ids, client.MatchingLabels{consts.IdentityTypeLabel: "ControlPlane", consts.RemoteClusterIDLabel: pid}); err != nil || len(ids.Items) != 1 {
		t.Fatalf("identity Secret: %v", err)
	}
	kc, err := clientcmd.Load(ids.Items[0].Data[consts.KubeconfigSecretKey])
	if err != nil {
		t.Fatal(err)
	}
	var keyPEM []byte
	for _, a := range kc.AuthInfos {
		keyPEM = a.ClientKeyData
	}
	if len(keyPEM) == 0 {
		t.Fatal("identity kubeconfig has no client key")
	}
	secrets = append(secrets, base64.StdEncoding.EncodeToString(keyPEM), strings.Split(strings.TrimSpace(string(keyPEM)), "\n")[1])

	plan := tf.run(t, append([]string{"plan", "-destroy", "-input=false", "-no-color"}, args...)...)
	shown := tf.run(t, "show", "-no-color")
	for name, text := range map[string]string{"plan -destroy": plan, "show": shown} {
		if !strings.Contains(text, "(sensitive value)") {
			t.Errorf("terraform %s shows no sensitive value at all: is the identity's kubeconfig missing?", name)
		}
		for i, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("terraform %s shows secret %d", name, i)
			}
		}
	}
	state := tf.run(t, "show", "-json")
	for i, key := range secrets[:2] {
		if strings.Contains(state, key) {
			t.Errorf("gateway private key %d is in the state", i)
		}
	}
}
