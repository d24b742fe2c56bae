package grantenforcement

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// TestContractExpiryRefusesNewShadowPods: a slice whose contract ended (the negotiation's
// annotation consts.ContractExpiredAnnotation) refuses new ShadowPods from its virtual node,
// saying the contract ended and that its renewal lifts the cordon; renewed (annotation gone),
// they are admitted again.
func TestContractExpiryRefusesNewShadowPods(t *testing.T) {
	provider := corev1beta1.ClusterID("cl-prov")
	s := authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-cl-a", Name: "s1",
		Annotations: map[string]string{consts.ContractAnnotation: "s1", consts.ContractExpiredAnnotation: "true"}},
		Spec: authv1beta1.ResourceSliceSpec{ProviderClusterID: &provider}}
	sp := &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{consts.OriginNodeLabel: consts.VirtualNodeName("cl-prov", "s1")}}}
	key := types.NamespacedName{Namespace: "app", Name: "p"}
	why := cordonRefusal([]authv1beta1.ResourceSlice{s}, "cl-a", key, sp)
	for _, part := range []string{"liqo-tenant-cl-a/s1", consts.ContractExpiredAnnotation, "contract s1 ended", "renews it"} {
		if !strings.Contains(why, part) {
			t.Errorf("refusal %q does not say %q", why, part)
		}
	}
	delete(s.Annotations, consts.ContractExpiredAnnotation)
	if why := cordonRefusal([]authv1beta1.ResourceSlice{s}, "cl-a", key, sp); why != "" {
		t.Errorf("renewed: refused, %q", why)
	}
}
