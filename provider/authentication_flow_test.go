package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// authResourceStateLacks fails when the state of one resource holds a value of another's
// attribute (read from the Terraform state in the check before it).
type authResourceStateLacks struct {
	addr   string
	secret *string
}

func (c authResourceStateLacks) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	if *c.secret == "" {
		resp.Error = fmt.Errorf("no secret captured to look for")
		return
	}
	if req.State == nil || req.State.Values == nil || req.State.Values.RootModule == nil {
		resp.Error = fmt.Errorf("no state")
		return
	}
	for _, r := range req.State.Values.RootModule.Resources {
		if r.Address != c.addr {
			continue
		}
		b, err := json.Marshal(r)
		if err != nil {
			resp.Error = err
			return
		}
		if strings.Contains(string(b), *c.secret) {
			resp.Error = fmt.Errorf("the state of %s holds the secret", c.addr)
		}
		return
	}
	resp.Error = fmt.Errorf("%s not in state", c.addr)
}

// authGCStandIn removes the foregroundDeletion finalizer from the RoleBindings and Roles of a
// namespace and from CSRs that are being deleted, until ctx ends.
func authGCStandIn(ctx context.Context, c client.Client, ns string) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var objs []client.Object
		rbs, roles, csrs := &rbacv1.RoleBindingList{}, &rbacv1.RoleList{}, &certificatesv1.CertificateSigningRequestList{}
		if c.List(ctx, rbs, client.InNamespace(ns)) == nil {
			for i := range rbs.Items {
				objs = append(objs, &rbs.Items[i])
			}
		}
		if c.List(ctx, roles, client.InNamespace(ns)) == nil {
			for i := range roles.Items {
				objs = append(objs, &roles.Items[i])
			}
		}
		if c.List(ctx, csrs) == nil {
			for i := range csrs.Items {
				objs = append(objs, &csrs.Items[i])
			}
		}
		for _, o := range objs {
			if o.GetDeletionTimestamp() != nil && len(o.GetFinalizers()) > 0 {
				patch := client.MergeFrom(o.DeepCopyObject().(client.Object))
				o.SetFinalizers(nil)
				_ = c.Patch(ctx, o, patch)
			}
		}
	}
}

func authFlowConfig() string {
	return providerBlock() + `
resource "liqo_tenant_namespace" "on_provider" {
  cluster           = "provider"
  remote_cluster_id = "flow-consumer"
}

resource "liqo_tenant" "consumer" {
  cluster             = "provider"
  namespace           = liqo_tenant_namespace.on_provider.name
  consumer_cluster_id = "flow-consumer"
  authz_policy        = "TolerateNoHandshake"
}

resource "liqo_consumer_identity" "consumer" {
  cluster             = "provider"
  namespace           = liqo_tenant_namespace.on_provider.name
  consumer_cluster_id = "flow-consumer"
  validity_hours      = 24
  renew_before        = "1h"
}

resource "liqo_tenant_namespace" "on_consumer" {
  cluster           = "consumer"
  remote_cluster_id = "flow-provider"
}

resource "liqo_identity" "provider" {
  cluster                 = "consumer"
  namespace               = liqo_tenant_namespace.on_consumer.name
  provider_cluster_id     = "flow-provider"
  remote_tenant_namespace = liqo_tenant_namespace.on_provider.name
  kubeconfig_wo           = liqo_consumer_identity.consumer.kubeconfig
  kubeconfig_wo_version   = parseint(formatdate("YYYYMMDDhhmmss", liqo_consumer_identity.consumer.certificate_expires_at), 10)
}
`
}

// TestAccAuthenticationFlow: the authentication of seed 003 across both clusters in one
// configuration: the provider issues the consumer's credentials, the consumer stores them through
// the write-only attribute, and the kubeconfig in the consumer's Secret works against the
// provider, while the liqo_identity's state never holds it.
func TestAccAuthenticationFlow(t *testing.T) {
	var privateKey string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_11_0)},
		Steps: []resource.TestStep{{
			Config: authFlowConfig(),
			Check: resource.ComposeTestCheckFunc(
				func(s *terraform.State) error {
					cfg, err := clientcmd.Load([]byte(stateAttr(s, "liqo_consumer_identity.consumer", "kubeconfig")))
					if err != nil {
						return err
					}
					for _, u := range cfg.AuthInfos {
						privateKey = strings.TrimSpace(string(u.ClientKeyData))
					}
					if privateKey == "" {
						return fmt.Errorf("no private key in the exported kubeconfig")
					}
					return nil
				},
				func(*terraform.State) error {
					ctx := context.Background()
					s := &corev1.Secret{}
					key := client.ObjectKey{Namespace: "liqo-tenant-flow-provider", Name: "kubeconfig-controlplane-flow-provider"}
					if err := cluster("consumer").Client.Get(ctx, key, s); err != nil {
						return fmt.Errorf("identity Secret in consumer: %w", err)
					}
					cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data["kubeconfig"])
					if err != nil {
						return err
					}
					c, err := client.New(cfg, client.Options{Scheme: cluster("provider").Client.Scheme()})
					if err != nil {
						return err
					}
					if err := c.Create(ctx, consumerSlice("liqo-tenant-flow-consumer", "from-consumer")); err != nil {
						return fmt.Errorf("the consumer's stored kubeconfig cannot create a ResourceSlice in the provider: %w", err)
					}
					return nil
				},
			),
			ConfigStateChecks: []statecheck.StateCheck{
				authResourceStateLacks{addr: "liqo_identity.provider", secret: &privateKey},
			},
		}},
	})
}

// TestAccConsumerIdentitySigningTimeout: in a cluster whose controller manager does not sign
// CSRs, the wait for the certificate times out with an error naming the module, the CSR, the
// cluster and the last conditions seen; the state saved before the wait lets destroy remove
// what was created.
func TestAccConsumerIdentitySigningTimeout(t *testing.T) {
	// A cluster without kube-controller-manager: nothing signs CSRs there.
	nosigner := testenv.New(t, testenv.ClusterOptions{Name: "nosigner"}).Cluster("nosigner")
	ctx := context.Background()
	const ns = "liqo-tenant-unsigned"
	if err := nosigner.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	block := fmt.Sprintf(`
provider "liqo" {
  clusters = {
    nosigner = { config_path = %q }
  }
}
`, nosigner.KubeconfigPath)
	const addr = "liqo_consumer_identity.ci"
	// Without kube-controller-manager there is no garbage collector either, and deletion is
	// foreground (deleteAndWait): this goroutine stands in for the garbage collector, removing
	// the foregroundDeletion finalizer of the objects being deleted (none has dependents).
	gcCtx, stopGC := context.WithCancel(ctx)
	defer stopGC()
	go authGCStandIn(gcCtx, nosigner.Client, ns)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				Config: block + `
resource "liqo_consumer_identity" "ci" {
  cluster             = "nosigner"
  namespace           = "` + ns + `"
  consumer_cluster_id = "unsigned"
  timeouts {
    create = "3s"
  }
}
`,
				ExpectError: regexp.MustCompile(`(?s)liqo_consumer_identity: waiting for\s+CertificateSigningRequest\s+liqo-consumer-unsigned-` + ns +
					`-\S+\s+in\s+cluster\s+"nosigner"\s+\(https://[^)]+\)\s+to\s+be\s+signed\s+\(last\s+seen:\s+no\s+certificate\s+yet,\s+conditions:\s+Approved=True\s+\(TerraformApproved\)\)`),
			},
			{
				// The state was saved before the wait: removing the resource destroys what it made.
				Config: block,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroy),
				}},
				Check: func(*terraform.State) error {
					for _, obj := range []client.Object{
						&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "liqo-consumer-unsigned"}},
						&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "liqo-consumer-unsigned"}},
					} {
						if err := nosigner.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
							return fmt.Errorf("%T %s left: %w", obj, obj.GetName(), err)
						}
					}
					csrs := &certificatesv1.CertificateSigningRequestList{}
					if err := nosigner.Client.List(ctx, csrs); err != nil {
						return err
					}
					if len(csrs.Items) != 0 {
						return fmt.Errorf("CSRs left: %d", len(csrs.Items))
					}
					return nil
				},
			},
		},
	})
}
