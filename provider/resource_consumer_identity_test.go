package provider_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/peerrbac"
	"github.com/peerkit/terraform-provider-liqo/provider"
)

// consumerIdentityConfig: the consumer's tenant namespace in the provider cluster and the
// credentials issued in it.
// The tests ask for certificates valid for a day (the test clusters' signing CA, valid for a
// week, caps them anyway); with the default renew_before (720h), more than half of that, they
// are due in the last third of their lifetime.
func consumerIdentityConfig(consumerID, extra string) string {
	return providerBlock() + fmt.Sprintf(`
resource "liqo_tenant_namespace" "ns" {
  cluster           = "provider"
  remote_cluster_id = "ciacc"
}

resource "liqo_consumer_identity" "ci" {
  cluster             = "provider"
  namespace           = liqo_tenant_namespace.ns.name
  consumer_cluster_id = %q
  validity_hours      = 24
  %s
}
`, consumerID, extra)
}

// consumerClient is a client of the provider cluster that authenticates with the kubeconfig
// the resource exported (read from the state, where Terraform keeps sensitive values).
func consumerClient(s *terraform.State, addr string) (client.Client, string, error) {
	rs, ok := s.RootModule().Resources[addr]
	if !ok {
		return nil, "", fmt.Errorf("%s not in state", addr)
	}
	kc := rs.Primary.Attributes["kubeconfig"]
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kc))
	if err != nil {
		return nil, "", fmt.Errorf("exported kubeconfig: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: cluster("provider").Client.Scheme()})
	return c, kc, err
}

func consumerSlice(ns, name string) *authv1beta1.ResourceSlice {
	return &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// checkConsumerAccess proves the exported kubeconfig works with least privilege: a ResourceSlice
// in the tenant namespace can be created, Secrets there cannot be read, and a ResourceSlice in
// another namespace cannot be created.
func checkConsumerAccess(addr, ns, slice string, keep *string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		ctx := context.Background()
		c, kc, err := consumerClient(s, addr)
		if err != nil {
			return err
		}
		if keep != nil {
			*keep = kc
		}
		if err := c.Create(ctx, consumerSlice(ns, slice)); err != nil {
			return fmt.Errorf("the consumer cannot create a ResourceSlice in %s: %w", ns, err)
		}
		if err := c.Delete(ctx, consumerSlice(ns, slice)); err != nil {
			return fmt.Errorf("the consumer cannot delete its ResourceSlice in %s: %w", ns, err)
		}
		if err := c.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
			return fmt.Errorf("listing Secrets in %s: got %w, want Forbidden", ns, err)
		}
		if err := c.Create(ctx, consumerSlice("default", slice)); !apierrors.IsForbidden(err) {
			return fmt.Errorf("creating a ResourceSlice in default: got %w, want Forbidden", err)
		}
		return nil
	}
}

func stateAttr(s *terraform.State, addr, attr string) string {
	if rs, ok := s.RootModule().Resources[addr]; ok {
		return rs.Primary.Attributes[attr]
	}
	return ""
}

func TestAccConsumerIdentity(t *testing.T) {
	const addr, ns = "liqo_consumer_identity.ci", "liqo-tenant-ciacc"
	var firstKubeconfig, lastKubeconfig, firstCert, csrName string
	const clusterRole = "acc-liqo-remote-controlplane"
	ctx := context.Background()
	// A ClusterRole like Liqo's liqo-remote-controlplane, for role_name.
	cr := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: clusterRole},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"authentication.liqo.io"}, Resources: []string{"resourceslices"},
			Verbs: []string{"get", "list", "create", "delete"}}},
	}
	if err := cluster("provider").Client.Create(ctx, cr); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster("provider").Client.Delete(ctx, cr) })
	t.Cleanup(func() { provider.SetConsumerIdentityClockOffset(0) })

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: func(s *terraform.State) error {
			pc := cluster("provider").Client
			if csrName == "" || lastKubeconfig == "" {
				return fmt.Errorf("the test did not reach its last step")
			}
			for _, obj := range []client.Object{
				&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "liqo-consumer-ciacc-b"}},
				&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "liqo-consumer-ciacc-b"}},
				&certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: csrName}},
			} {
				if err := pc.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
					return fmt.Errorf("%T %s left after destroy: %w", obj, obj.GetName(), err)
				}
			}
			// The old certificate grants nothing any more.
			cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(lastKubeconfig))
			if err != nil {
				return err
			}
			c, err := client.New(cfg, client.Options{Scheme: pc.Scheme()})
			if err != nil {
				return err
			}
			if err := c.Create(ctx, consumerSlice(ns, "after-destroy")); !apierrors.IsForbidden(err) {
				return fmt.Errorf("creating a ResourceSlice with destroyed credentials: got %w, want Forbidden", err)
			}
			return checkNamespaceGone("provider", ns)(s)
		},
		Steps: []resource.TestStep{
			{
				Config: consumerIdentityConfig("ciacc-a", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("name"), knownvalue.StringExact("liqo-consumer-ciacc-a")),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("user_name"), knownvalue.StringExact("ciacc-a")),
					// The key is made at apply: the plan has no kubeconfig.
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("kubeconfig")),
					plancheck.ExpectSensitiveValue(addr, tfjsonpath.New("kubeconfig")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("provider/"+ns+"/liqo-consumer-ciacc-a")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("ready_for_renewal"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("validity_hours"), knownvalue.Int64Exact(24)),
					statecheck.ExpectSensitiveValue(addr, tfjsonpath.New("kubeconfig")),
				},
				Check: resource.ComposeTestCheckFunc(
					checkConsumerAccess(addr, ns, "slice-a", &firstKubeconfig),
					func(s *terraform.State) error {
						firstCert = stateAttr(s, addr, "certificate")
						block, _ := pem.Decode([]byte(firstCert))
						if block == nil {
							return fmt.Errorf("certificate in state is not PEM")
						}
						cert, err := x509.ParseCertificate(block.Bytes)
						if err != nil {
							return err
						}
						if cert.Subject.CommonName != "ciacc-a" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "liqo.io" {
							return fmt.Errorf("certificate subject %v", cert.Subject)
						}
						role := &rbacv1.Role{}
						if err := cluster("provider").Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "liqo-consumer-ciacc-a"}, role); err != nil {
							return err
						}
						if !equality.Semantic.DeepEqual(role.Rules, peerrbac.ControlPlaneRules()) {
							return fmt.Errorf("role rules %+v, want the controller manager's %+v", role.Rules, peerrbac.ControlPlaneRules())
						}
						return nil
					},
				),
			},
			{
				ResourceName:      addr,
				ImportState:       true,
				ImportStateId:     "provider/" + ns + "/liqo-consumer-ciacc-a",
				ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"timeouts", "kubeconfig", "certificate", "certificate_expires_at", "csr_name",
					"ready_for_renewal", "renew_before", "validity_hours"},
			},
			{
				// In place: bind a ClusterRole instead, and another server address in the kubeconfig.
				Config: consumerIdentityConfig("ciacc-a", fmt.Sprintf(`role_name = %q
  api_server_url = "https://peer-facing.example:6443"`, clusterRole)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("certificate"), knownvalue.NotNull()),
				}},
				Check: func(s *terraform.State) error {
					if got := stateAttr(s, addr, "certificate"); got != firstCert {
						return fmt.Errorf("the certificate changed on an in-place update")
					}
					cfg, err := clientcmd.Load([]byte(stateAttr(s, addr, "kubeconfig")))
					if err != nil {
						return err
					}
					if srv := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server; srv != "https://peer-facing.example:6443" {
						return fmt.Errorf("kubeconfig server %q", srv)
					}
					rb := &rbacv1.RoleBinding{}
					if err := cluster("provider").Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "liqo-consumer-ciacc-a"}, rb); err != nil {
						return err
					}
					if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != clusterRole {
						return fmt.Errorf("roleRef %+v", rb.RoleRef)
					}
					err = cluster("provider").Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "liqo-consumer-ciacc-a"}, &rbacv1.Role{})
					if !apierrors.IsNotFound(err) {
						return fmt.Errorf("the managed Role is left: %w", err)
					}
					return nil
				},
			},
			{
				// Back to the managed Role and the connection's server: the first kubeconfig works again.
				Config: consumerIdentityConfig("ciacc-a", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: checkConsumerAccess(addr, ns, "slice-a2", nil),
			},
			{
				// renew_before changes in place: a fresh day-long certificate is not due within 2h.
				Config: consumerIdentityConfig("ciacc-a", `renew_before = "2h"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("ready_for_renewal"), knownvalue.Bool(false)),
				},
			},
			{
				// Renewal: 23 hours later (the provider's clock moved forward), the certificate
				// expires within renew_before: the refresh marks it and the plan re-issues it.
				PreConfig: func() { provider.SetConsumerIdentityClockOffset(23 * time.Hour) },
				Config:    consumerIdentityConfig("ciacc-a", `renew_before = "2h"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("kubeconfig")),
				}},
				Check: resource.ComposeTestCheckFunc(
					func(s *terraform.State) error {
						// Back to the real clock before the framework's follow-up plan.
						provider.SetConsumerIdentityClockOffset(0)
						if stateAttr(s, addr, "certificate") == firstCert {
							return fmt.Errorf("the certificate was not re-issued")
						}
						return nil
					},
					checkConsumerAccess(addr, ns, "slice-renewed", nil),
				),
			},
			{
				// With the default renew_before (720h, more than half the day-long certificate's
				// lifetime), it is due in the last third of its lifetime: 15 hours later, not yet;
				// 17 hours later, yes.
				PreConfig: func() { provider.SetConsumerIdentityClockOffset(15 * time.Hour) },
				Config:    consumerIdentityConfig("ciacc-a", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("ready_for_renewal"), knownvalue.Bool(false)),
				},
				Check: func(*terraform.State) error { provider.SetConsumerIdentityClockOffset(0); return nil },
			},
			{
				PreConfig: func() { provider.SetConsumerIdentityClockOffset(17 * time.Hour) },
				Config:    consumerIdentityConfig("ciacc-a", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: func(*terraform.State) error { provider.SetConsumerIdentityClockOffset(0); return nil },
			},
			{
				// Another consumer: new credentials; the old ones grant nothing any more.
				Config: consumerIdentityConfig("ciacc-b", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkConsumerAccess(addr, ns, "slice-b", nil),
					func(*terraform.State) error {
						cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(firstKubeconfig))
						if err != nil {
							return err
						}
						c, err := client.New(cfg, client.Options{Scheme: cluster("provider").Client.Scheme()})
						if err != nil {
							return err
						}
						if err := c.Create(ctx, consumerSlice(ns, "old-identity")); !apierrors.IsForbidden(err) {
							return fmt.Errorf("old identity creating a ResourceSlice: got %w, want Forbidden", err)
						}
						return nil
					},
				),
			},
			{
				// The RoleBinding deleted outside Terraform: planned for re-creation.
				PreConfig: func() {
					deleteObjectOutOfBand(t, "provider", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "liqo-consumer-ciacc-b"}})
				},
				Config: consumerIdentityConfig("ciacc-b", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkConsumerAccess(addr, ns, "slice-b2", &lastKubeconfig),
					func(s *terraform.State) error { csrName = stateAttr(s, addr, "csr_name"); return nil },
				),
			},
		},
	})
}

// TestAccConsumerIdentityReservedGroup: a system: group (system:masters is a cluster
// administrator) is refused at plan time, before anything is written.
func TestAccConsumerIdentityReservedGroup(t *testing.T) {
	for _, org := range []string{"system:masters", "system:kube-controller-manager", "system:nodes"} {
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: protoV6Providers,
			Steps: []resource.TestStep{{
				Config:      consumerIdentityConfig("ciacc", fmt.Sprintf("organization = %q", org)),
				ExpectError: regexp.MustCompile(`(?s)organization.*must be a group name without a colon`),
				PlanOnly:    true,
			}},
		})
	}
}
