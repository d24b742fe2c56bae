package provider_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// renewConfig: a liqo_consumer_identity on the provider cluster and the liqo_identity that
// stores its kubeconfig on the consumer cluster (write-only, its version following the
// certificate, as in the examples), for consumer id; then extra.
func renewConfig(id, extra string) string {
	return providerBlock() + fmt.Sprintf(`
resource "liqo_tenant_namespace" "provider_side" {
  cluster           = "provider"
  remote_cluster_id = %[1]q
}

resource "liqo_consumer_identity" "ci" {
  cluster             = "provider"
  namespace           = liqo_tenant_namespace.provider_side.name
  consumer_cluster_id = %[1]q
  validity_hours      = 24
}

resource "liqo_tenant_namespace" "consumer_side" {
  cluster           = "consumer"
  remote_cluster_id = "%[1]s-provider"
}

resource "liqo_identity" "id" {
  cluster                 = "consumer"
  namespace               = liqo_tenant_namespace.consumer_side.name
  provider_cluster_id     = "%[1]s-provider"
  remote_tenant_namespace = liqo_tenant_namespace.provider_side.name
  kubeconfig_wo           = liqo_consumer_identity.ci.kubeconfig
  kubeconfig_wo_version   = parseint(formatdate("YYYYMMDDhhmmss", liqo_consumer_identity.ci.certificate_expires_at), 10)
}
`, id) + extra
}

// renewAction is the action on liqo_consumer_identity.ci (with more config lines), run once
// by the creation of terraform_data.<trigger>.
func renewAction(name, trigger, more string) string {
	return fmt.Sprintf(`
action "liqo_consumer_identity_renew" %[1]q {
  config {
    cluster        = liqo_consumer_identity.ci.cluster
    namespace      = liqo_consumer_identity.ci.namespace
    name           = liqo_consumer_identity.ci.name
    validity_hours = liqo_consumer_identity.ci.validity_hours
%[3]s
  }
}

resource "terraform_data" %[2]q {
  input      = "renew"
  depends_on = [liqo_identity.id]
  lifecycle {
    action_trigger {
      events  = [after_create]
      actions = [action.liqo_consumer_identity_renew.%[1]s]
    }
  }
}
`, name, trigger, more)
}

// renewalSecret reads the renewal Secret the action leaves next to the identity, and its
// certificate.
func renewalSecret(ctx context.Context, ns, name string) (*corev1.Secret, *x509.Certificate, error) {
	s := &corev1.Secret{}
	if err := cluster("provider").Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-renewal"}, s); err != nil {
		return nil, nil, fmt.Errorf("renewal Secret %s/%s-renewal: %w", ns, name, err)
	}
	block, _ := pem.Decode(s.Data["certificate"])
	if block == nil {
		return nil, nil, fmt.Errorf("renewal Secret %s: no PEM certificate", s.Name)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	return s, cert, err
}

// kubeconfigWorks checks that a kubeconfig authenticates to the provider cluster with the
// consumer's rights: it creates and deletes a ResourceSlice in the tenant namespace.
func kubeconfigWorks(kubeconfig, ns, slice string) error {
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kubeconfig))
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: cluster("provider").Client.Scheme()})
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := c.Create(ctx, consumerSlice(ns, slice)); err != nil {
		return fmt.Errorf("creating a ResourceSlice in %s with the kubeconfig: %w", ns, err)
	}
	return c.Delete(ctx, consumerSlice(ns, slice))
}

// TestAccActionConsumerIdentityRenew: liqo_consumer_identity_renew, triggered by an apply,
// issues a new certificate for the identity's user without touching the state: the renewal
// Secret holds a working kubeconfig with a new certificate, and the previous kubeconfig keeps
// working. The next plan shows the right thing: liqo_consumer_identity updated in place with
// the renewed certificate, and liqo_identity (whose version follows it) updated too; that
// apply puts the renewed kubeconfig in the state and on the consumer, deletes the Secret, and
// the plan after it is empty. A renewal for another organization is not taken (the plan stays
// empty); bad values fail at plan; a name that is no identity fails at apply, naming the
// RoleBinding; destroy leaves no Secret.
func TestAccActionConsumerIdentityRenew(t *testing.T) {
	const id, ns, name = "renewacc", "liqo-tenant-renewacc", "liqo-consumer-renewacc"
	const ci, identity = "liqo_consumer_identity.ci", "liqo_identity.id"
	ctx := context.Background()
	var firstCert, firstKubeconfig, renewedCert string
	renewed := renewConfig(id, renewAction("ci", "renew", ""))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: func(*terraform.State) error {
			// Owned by the RoleBinding: the garbage collector removes a renewal not taken.
			return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				err := cluster("provider").Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-renewal"}, &corev1.Secret{})
				return apierrors.IsNotFound(err), nil
			})
		},
		Steps: []resource.TestStep{
			{
				Config:      renewConfig(id, renewAction("ci", "renew", `    organization = "system:masters"`)),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)organization.*must be a group name without a colon`),
			},
			{
				Config:      renewConfig(id, renewAction("ci", "renew", `    api_server_url = "http://plain.example"`)),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)api_server_url.*must be an https:// URL`),
			},
			{
				Config: renewConfig(id, ""),
				Check: func(s *terraform.State) error {
					firstCert, firstKubeconfig = stateAttr(s, ci, "certificate"), stateAttr(s, ci, "kubeconfig")
					return nil
				},
			},
			{
				// The action runs: the state keeps the previous credentials, the Secret holds new
				// ones, and the next plan takes them.
				// A renewal within the second of the first certificate would expire at the same
				// time, which liqo_identity's kubeconfig_wo_version follows.
				PreConfig:          func() { time.Sleep(1100 * time.Millisecond) },
				Config:             renewed,
				ExpectNonEmptyPlan: true,
				Check: func(s *terraform.State) error {
					if got := stateAttr(s, ci, "certificate"); got != firstCert {
						return fmt.Errorf("the action changed the state's certificate")
					}
					secret, cert, err := renewalSecret(ctx, ns, name)
					if err != nil {
						return err
					}
					renewedCert = string(secret.Data["certificate"])
					if renewedCert == firstCert {
						return fmt.Errorf("the renewal holds the state's certificate")
					}
					if cert.Subject.CommonName != id || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "liqo.io" {
						return fmt.Errorf("renewed certificate subject %v", cert.Subject)
					}
					if secret.Labels["liqo.io/managed-by"] == "" || len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].Kind != "RoleBinding" {
						return fmt.Errorf("renewal Secret labels %v, owners %v: want managed, owned by the RoleBinding", secret.Labels, secret.OwnerReferences)
					}
					if err := kubeconfigWorks(string(secret.Data["kubeconfig"]), ns, "renewed"); err != nil {
						return fmt.Errorf("renewed kubeconfig: %w", err)
					}
					// A client certificate cannot be revoked: the previous one still works.
					return kubeconfigWorks(firstKubeconfig, ns, "previous")
				},
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(ci, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(ci, tfjsonpath.New("certificate"), knownvalue.StringFunc(func(v string) error {
						if v != renewedCert {
							return fmt.Errorf("the plan's certificate is not the renewed one")
						}
						return nil
					})),
					plancheck.ExpectKnownValue(ci, tfjsonpath.New("ready_for_renewal"), knownvalue.Bool(false)),
					plancheck.ExpectResourceAction(identity, plancheck.ResourceActionUpdate),
				}},
			},
			{
				// That plan applied: the renewed credentials are in the state and on the consumer.
				Config: renewed,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(ci, plancheck.ResourceActionUpdate),
						plancheck.ExpectResourceAction(identity, plancheck.ResourceActionUpdate),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: func(s *terraform.State) error {
					if got := stateAttr(s, ci, "certificate"); got != renewedCert {
						return fmt.Errorf("the state's certificate is not the renewed one")
					}
					kc := stateAttr(s, ci, "kubeconfig")
					if kc == firstKubeconfig {
						return fmt.Errorf("the state's kubeconfig is the previous one")
					}
					if err := kubeconfigWorks(kc, ns, "adopted"); err != nil {
						return fmt.Errorf("kubeconfig in the state: %w", err)
					}
					onConsumer := &corev1.Secret{}
					key := client.ObjectKey{Namespace: "liqo-tenant-" + id + "-provider", Name: "kubeconfig-controlplane-" + id + "-provider"}
					if err := cluster("consumer").Client.Get(ctx, key, onConsumer); err != nil {
						return fmt.Errorf("the consumer's kubeconfig Secret: %w", err)
					}
					if string(onConsumer.Data[consts.KubeconfigSecretKey]) != kc {
						return fmt.Errorf("the consumer's kubeconfig Secret does not hold the renewed kubeconfig")
					}
					err := cluster("provider").Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-renewal"}, &corev1.Secret{})
					if !apierrors.IsNotFound(err) {
						return fmt.Errorf("the renewal Secret is left once taken: %w", err)
					}
					return nil
				},
			},
			{
				// A renewal for another organization is not the identity's: it is not taken.
				Config:           renewed + renewAction("other_org", "renew_other", `    organization = "other.example"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: func(s *terraform.State) error {
					_, cert, err := renewalSecret(ctx, ns, name)
					if err != nil {
						return err
					}
					if len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "other.example" {
						return fmt.Errorf("renewed certificate subject %v, want organization other.example", cert.Subject)
					}
					if stateAttr(s, ci, "certificate") != renewedCert {
						return fmt.Errorf("the state took a renewal for another organization")
					}
					return nil
				},
			},
			{
				// A name that is no liqo_consumer_identity's: the apply fails, naming the RoleBinding.
				Config: renewed + strings.Replace(renewAction("nobody", "renew_nobody", ""),
					"name           = liqo_consumer_identity.ci.name", `name           = "nobody"`, 1),
				ExpectError: regexp.MustCompile(`(?s)no RoleBinding liqo-tenant-renewacc/nobody in\s+cluster\s+"provider".*namespace and\s+name\s+must\s+be\s+those\s+of\s+an\s+applied\s+liqo_consumer_identity`),
			},
		},
	})
}

// TestActionConsumerIdentityRenewCLI invokes liqo_consumer_identity_renew with the real
// terraform CLI (`terraform apply -invoke=...`, the built provider through dev_overrides): the
// output shows the action's progress and result; the invocation changes no resource; the next
// plan updates liqo_consumer_identity in place, and after that apply a plan has no changes.
func TestActionConsumerIdentityRenewCLI(t *testing.T) {
	src := t.TempDir()
	main := requiredProvidersBlock + renewConfig("renewcli", `
action "liqo_consumer_identity_renew" "now" {
  config {
    cluster        = liqo_consumer_identity.ci.cluster
    namespace      = liqo_consumer_identity.ci.namespace
    name           = liqo_consumer_identity.ci.name
    organization   = liqo_consumer_identity.ci.organization
    validity_hours = liqo_consumer_identity.ci.validity_hours
    api_server_url = liqo_consumer_identity.ci.api_server_url
  }
}
`)
	if err := os.WriteFile(filepath.Join(src, "main.tf"), []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	d := newTerraformDir(t, src)
	d.run(t, "apply", "-auto-approve", "-no-color", "-input=false")
	t.Cleanup(func() { d.run(t, "destroy", "-auto-approve", "-no-color", "-input=false") })
	before := d.run(t, "state", "show", "-no-color", "liqo_consumer_identity.ci")
	// liqo_identity's kubeconfig_wo_version follows the expiry, to the second: a renewal within
	// the second of the first certificate would expire at the same time.
	time.Sleep(1100 * time.Millisecond)
	out := d.run(t, "apply", "-auto-approve", "-no-color", "-input=false", "-invoke=action.liqo_consumer_identity_renew.now")
	for _, want := range []string{
		"issuing a certificate for user renewcli (organization liqo.io)",
		"approving it and waiting for the signer",
		"done: new certificate for renewcli, valid until",
		"the next plan updates liqo_consumer_identity provider/liqo-tenant-renewcli/liqo-consumer-renewcli in place",
	} {
		if !strings.Contains(oneLine(out), want) {
			t.Errorf("the invocation's output lacks %q:\n%s", want, out)
		}
	}
	if after := d.run(t, "state", "show", "-no-color", "liqo_consumer_identity.ci"); after != before {
		t.Errorf("the invocation changed the state of liqo_consumer_identity.ci:\n%s\n%s", before, after)
	}
	code, plan := d.exitCode(t, "plan", "-detailed-exitcode", "-no-color", "-input=false")
	if code != 2 || !strings.Contains(plan, "liqo_consumer_identity.ci will be updated in-place") ||
		!strings.Contains(plan, "liqo_identity.id will be updated in-place") || strings.Contains(plan, "must be replaced") {
		t.Errorf("plan after the invocation: exit %d, want liqo_consumer_identity and liqo_identity updated in place:\n%s", code, plan)
	}
	d.run(t, "apply", "-auto-approve", "-no-color", "-input=false")
	if code, plan := d.exitCode(t, "plan", "-detailed-exitcode", "-no-color", "-input=false"); code != 0 {
		t.Errorf("plan after taking the renewal: exit %d, want no changes:\n%s", code, plan)
	}
}
