package replication_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestCordonMirrored: each side's cordon of a slice reaches the other under a key of its own,
// and neither undoes the other's. The provider's cordon (liqo.io/cordon on its copy, as
// `liqoctl cordon resourceslice` sets it; or liqo.io/cordon-tenant) shows on the consumer's
// slice as liqo.io/cordon-provider; the consumer's (liqo.io/cordon on its own slice) shows on
// the copy as liqo.io/cordon-consumer. A spec change replicated meanwhile keeps the provider's
// annotation; `liqoctl uncordon` on the provider stays done while the consumer's own cordon
// holds; "false" is no cordon. The slice's contract annotation goes to the copy. Once settled, nothing is written any more (no flapping).
func TestCordonMirrored(t *testing.T) {
	cons, prov, _ := peered(t)
	ctx := t.Context()
	startReplication(t, cons)
	providerID := corev1beta1.ClusterID("cl-provider")
	local := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: "test",
		Labels: map[string]string{consts.ReplicationLabel: "true", consts.RemoteClusterIDLabel: "cl-provider"}},
		Spec: authv1beta1.ResourceSliceSpec{ProviderClusterID: &providerID,
			Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	if err := cons.Client.Create(ctx, local); err != nil {
		t.Fatal(err)
	}
	localKey, remoteKey := client.ObjectKeyFromObject(local), client.ObjectKey{Namespace: provNS, Name: "test"}
	testenv.Eventually(t, "the copy on the provider", 30*time.Second, func(ctx context.Context) bool {
		return prov.Client.Get(ctx, remoteKey, &authv1beta1.ResourceSlice{}) == nil
	})
	// annotate sets (or, with "", removes) an annotation of a slice, as a user or liqoctl does.
	// (Read again on a conflict: the replicator may write the slice meanwhile.)
	annotate := func(c client.Client, key client.ObjectKey, k, v string) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s := &authv1beta1.ResourceSlice{}
			if err := c.Get(ctx, key, s); err != nil {
				return err
			}
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			if v == "" {
				delete(s.Annotations, k)
			} else {
				s.Annotations[k] = v
			}
			return c.Update(ctx, s)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// has waits until the slice's annotations have k=v ("" for absent) for each pair of want.
	has := func(what string, c client.Client, key client.ObjectKey, want ...string) {
		t.Helper()
		s := &authv1beta1.ResourceSlice{}
		testenv.Eventually(t, what, 30*time.Second, func(ctx context.Context) bool {
			if c.Get(ctx, key, s) != nil {
				return false
			}
			for i := 0; i+1 < len(want); i += 2 {
				if v, ok := s.Annotations[want[i]]; v != want[i+1] || (want[i+1] == "" && ok) {
					return false
				}
			}
			return true
		})
	}

	// liqoctl cordon resourceslice test --remote-cluster-id cl-consumer, on the provider.
	annotate(prov.Client, remoteKey, consts.CordonAnnotation, "true")
	has("the provider's cordon on the consumer's slice", cons.Client, localKey, consts.ProviderCordonAnnotation, "true", consts.CordonAnnotation, "")
	// A spec change of the consumer replicated meanwhile keeps the provider's annotation.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &authv1beta1.ResourceSlice{}
		if err := cons.Client.Get(ctx, localKey, s); err != nil {
			return err
		}
		s.Spec.Resources[corev1.ResourceCPU] = resource.MustParse("6")
		return cons.Client.Update(ctx, s)
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the new request on the provider", 30*time.Second, func(ctx context.Context) bool {
		r := &authv1beta1.ResourceSlice{}
		return prov.Client.Get(ctx, remoteKey, r) == nil && r.Spec.Resources.Cpu().String() == "6"
	})
	has("the provider's cordon kept on the copy after a replicated spec change", prov.Client, remoteKey, consts.CordonAnnotation, "true")

	// The consumer cordons its own slice too: mirrored to the copy under its own key.
	annotate(cons.Client, localKey, consts.CordonAnnotation, "true")
	has("the consumer's cordon on the copy", prov.Client, remoteKey, consts.ConsumerCordonAnnotation, "true", consts.CordonAnnotation, "true")

	// liqoctl uncordon resourceslice: the provider's cordon goes on both sides, the consumer's stays.
	annotate(prov.Client, remoteKey, consts.CordonAnnotation, "")
	has("the provider's uncordon on the consumer's slice", cons.Client, localKey, consts.ProviderCordonAnnotation, "", consts.CordonAnnotation, "true")
	has("the consumer's cordon still on the copy", prov.Client, remoteKey, consts.ConsumerCordonAnnotation, "true", consts.CordonAnnotation, "")

	// The tenant's cordon (upstream's tenant controller) is the provider's too.
	annotate(prov.Client, remoteKey, consts.CordonTenantAnnotation, "true")
	has("the tenant's cordon on the consumer's slice", cons.Client, localKey, consts.ProviderCordonAnnotation, "true")
	annotate(prov.Client, remoteKey, consts.CordonTenantAnnotation, "")
	has("the tenant's uncordon on the consumer's slice", cons.Client, localKey, consts.ProviderCordonAnnotation, "")

	// "false" is no cordon (upstream's rule): the mirror goes.
	annotate(cons.Client, localKey, consts.CordonAnnotation, "false")
	has("the consumer's uncordon on the copy", prov.Client, remoteKey, consts.ConsumerCordonAnnotation, "", consts.CordonAnnotation, "")
	annotate(prov.Client, remoteKey, consts.CordonAnnotation, "0")
	has("the provider's liqo.io/cordon=0, no cordon", cons.Client, localKey, consts.ProviderCordonAnnotation, "")

	// The contract the consumer names for its slice reaches the copy (the provider's
	// negotiation decides the slice by it), and its removal too.
	annotate(cons.Client, localKey, consts.ContractAnnotation, "c1")
	has("the slice's contract on the copy", prov.Client, remoteKey, consts.ContractAnnotation, "c1")
	annotate(cons.Client, localKey, consts.ContractAnnotation, "")
	has("no contract on the copy", prov.Client, remoteKey, consts.ContractAnnotation, "")

	// Settled: cordoned on both sides, then nothing more is written on either side.
	annotate(prov.Client, remoteKey, consts.CordonAnnotation, "true")
	annotate(cons.Client, localKey, consts.CordonAnnotation, "true")
	has("both cordons on the consumer's slice", cons.Client, localKey, consts.ProviderCordonAnnotation, "true", consts.CordonAnnotation, "true")
	has("both cordons on the copy", prov.Client, remoteKey, consts.ConsumerCordonAnnotation, "true", consts.CordonAnnotation, "true")
	versions := func() [2]string {
		l, r := &authv1beta1.ResourceSlice{}, &authv1beta1.ResourceSlice{}
		if err := cons.Client.Get(ctx, localKey, l); err != nil {
			t.Fatal(err)
		}
		if err := prov.Client.Get(ctx, remoteKey, r); err != nil {
			t.Fatal(err)
		}
		return [2]string{l.ResourceVersion, r.ResourceVersion}
	}
	before := versions()
	time.Sleep(3 * time.Second)
	if after := versions(); after != before {
		t.Errorf("resource versions (consumer's slice, copy) went from %v to %v with nothing changed: the replicator keeps writing", before, after)
	}
}
