package podsecurity_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity/podsecuritytest"
)

// TestCasesCoverEveryCheck: the test pods break every check of Pod Security admission's
// baseline and restricted levels, so the tests that use them cover the whole list.
func TestCasesCoverEveryCheck(t *testing.T) {
	covered := map[api.Level]map[string]bool{api.LevelBaseline: {}, api.LevelRestricted: {}}
	for _, c := range podsecuritytest.Baseline() {
		covered[api.LevelBaseline][c.Check] = true
	}
	for _, c := range podsecuritytest.Restricted() {
		covered[api.LevelRestricted][c.Check] = true
	}
	for _, check := range policy.DefaultChecks() {
		if !covered[check.Level][string(check.ID)] {
			t.Errorf("no test pod breaks check %s of level %s", check.ID, check.Level)
		}
	}
}

// TestRefuse: at baseline, each pod breaking one baseline check is refused, naming the field,
// the level, where the level comes from and how to grant more; at privileged each passes but
// those sharing a host namespace, which no level lets through; at restricted, each pod
// breaking one restricted check is refused and the restricted pod passes; the attack
// is refused at baseline with both fields named.
func TestRefuse(t *testing.T) {
	baseline := podsecurity.Policy{}.ForTenant("cl-a", nil)
	privileged := podsecurity.Policy{Default: api.LevelPrivileged}.ForTenant("cl-a", nil)
	restricted := podsecurity.Policy{Default: api.LevelRestricted}.ForTenant("cl-a", nil)
	if baseline.Level != api.LevelBaseline {
		t.Errorf("the default level is %s, want baseline", baseline.Level)
	}
	if meta, spec := podsecuritytest.Pod(); podsecurity.Refuse(&baseline, meta, spec) != nil {
		t.Errorf("the baseline pod is refused at baseline: %+v", podsecurity.Refuse(&baseline, meta, spec))
	}
	for _, c := range podsecuritytest.Baseline() {
		meta, spec := podsecuritytest.Pod()
		c.Set(meta, spec)
		r := podsecurity.Refuse(&baseline, meta, spec)
		if r == nil {
			t.Errorf("%s: admitted at baseline", c.Name)
			continue
		}
		wantSaid(t, c.Name, r.Message, c.Want)
		host := c.Check == "hostNamespaces"
		if host {
			wantSaid(t, c.Name, r.Reason, podsecurity.ReasonHostNamespaces)
		} else {
			wantSaid(t, c.Name, r.Reason+r.Message, podsecurity.ReasonPodSecurity, `level "baseline"`, "cluster cl-a",
				"the provider's default", "pod_security", consts.TenantPodSecurityAnnotation, podsecurity.Flag, podsecurity.ChartValue)
		}
		if r := podsecurity.Refuse(&privileged, meta, spec); (r != nil) != host {
			t.Errorf("%s at privileged: %+v, want refused only for a host namespace", c.Name, r)
		}
		if r := podsecurity.Refuse(nil, meta, spec); (r != nil) != host {
			t.Errorf("%s with no level: %+v, want refused only for a host namespace", c.Name, r)
		}
	}
	meta, spec := podsecuritytest.Pod()
	podsecuritytest.Attack(meta, spec)
	r := podsecurity.Refuse(&baseline, meta, spec)
	if r == nil {
		t.Fatal("the attack is admitted at baseline")
	}
	wantSaid(t, "attack", r.Message, podsecuritytest.AttackWant...)

	if meta, spec := podsecuritytest.RestrictedPod(); podsecurity.Refuse(&restricted, meta, spec) != nil {
		t.Errorf("the restricted pod is refused at restricted: %+v", podsecurity.Refuse(&restricted, meta, spec))
	}
	if meta, spec := podsecuritytest.Pod(); podsecurity.Refuse(&restricted, meta, spec) == nil {
		t.Error("the baseline pod is admitted at restricted")
	}
	for _, c := range podsecuritytest.Restricted() {
		meta, spec := podsecuritytest.RestrictedPod()
		c.Set(meta, spec)
		if r := podsecurity.Refuse(&baseline, meta, spec); r != nil {
			t.Errorf("%s: refused at baseline: %s", c.Name, r.Message)
		}
		r := podsecurity.Refuse(&restricted, meta, spec)
		if r == nil {
			t.Errorf("%s: admitted at restricted", c.Name)
			continue
		}
		wantSaid(t, c.Name, r.Message, c.Want, `level "restricted"`)
	}
}

// TestForTenant: a Tenant's annotation sets its consumer's level; none, or one that is no
// level (ignored, saying so), leaves the provider's default.
func TestForTenant(t *testing.T) {
	tenant := func(annotations map[string]string) *authv1beta1.Tenant {
		return &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-cl-a", Name: "cl-a", Annotations: annotations}}
	}
	p := podsecurity.Policy{Default: api.LevelRestricted}
	for _, tc := range []struct {
		tenant  *authv1beta1.Tenant
		level   api.Level
		source  string
		ignored string
	}{
		{nil, api.LevelRestricted, "the provider's default", ""},
		{tenant(nil), api.LevelRestricted, "the provider's default", ""},
		{tenant(map[string]string{consts.TenantPodSecurityAnnotation: "privileged"}), api.LevelPrivileged,
			"annotation liqo.io/pod-security of its Tenant liqo-tenant-cl-a/cl-a", ""},
		{tenant(map[string]string{consts.TenantPodSecurityAnnotation: "Privileged"}), api.LevelRestricted, "the provider's default",
			`annotation liqo.io/pod-security of Tenant liqo-tenant-cl-a/cl-a: "Privileged" is not a Pod Security level: use one of privileged, baseline, restricted; the provider's default restricted applies`},
	} {
		d := p.ForTenant("cl-a", tc.tenant)
		if d.Level != tc.level || d.Source != tc.source || d.Ignored != tc.ignored || d.Consumer != "cl-a" {
			t.Errorf("ForTenant(%v) = %+v, want level %s from %q, ignored %q", tc.tenant, d, tc.level, tc.source, tc.ignored)
		}
	}
}

// TestLabels: a remote namespace is enforced, audited and warned at its level, at the API
// server's own version of the checks; SetLabels keeps other labels and says when it changed any.
func TestLabels(t *testing.T) {
	ns := &metav1.ObjectMeta{Labels: map[string]string{"keep": "me", consts.PodSecurityEnforceLabel: "privileged"}}
	if !podsecurity.SetLabels(ns, api.LevelBaseline) {
		t.Error("SetLabels reports no change")
	}
	want := map[string]string{"keep": "me", consts.PodSecurityEnforceLabel: "baseline", consts.PodSecurityEnforceVersionLabel: "latest",
		consts.PodSecurityAuditLabel: "baseline", consts.PodSecurityWarnLabel: "baseline"}
	for k, v := range want {
		if ns.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, ns.Labels[k], v, ns.Labels)
		}
	}
	if podsecurity.SetLabels(ns, api.LevelBaseline) {
		t.Error("SetLabels reports a change when there is none")
	}
	for _, bad := range []string{"", "Baseline", "none"} {
		if _, err := podsecurity.ParseLevel(bad); err == nil || !strings.Contains(err.Error(), "use one of privileged, baseline, restricted") {
			t.Errorf("ParseLevel(%q) = %v", bad, err)
		}
	}
}

func wantSaid(t *testing.T, what, msg string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("%s: %q does not say %q", what, msg, p)
		}
	}
}

// BenchmarkRefuse: the check of one pod at baseline, as the grant webhook and the ShadowPod
// controller make it for every ShadowPod.
func BenchmarkRefuse(b *testing.B) {
	d := podsecurity.Policy{}.ForTenant("cl-a", nil)
	meta, spec := podsecuritytest.Pod()
	for b.Loop() {
		if podsecurity.Refuse(&d, meta, spec) != nil {
			b.Fatal("refused")
		}
	}
}
