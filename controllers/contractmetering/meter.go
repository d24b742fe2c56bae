package contractmetering

import (
	"context"
	"fmt"
	"math/big"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/grantenforcement"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
)

// meter adds to seconds what the contract's ShadowPods alive now requested of each contracted
// resource over [from, to], each from its creation if later.
func (r *Reconciler) meter(ctx context.Context, c *marketv1alpha1.Contract, seconds map[corev1.ResourceName]*big.Rat, from, to time.Time) error {
	pods, err := r.shadowPods(ctx, c)
	if err != nil {
		return err
	}
	for i := range pods {
		sp := &pods[i]
		since := from
		if sp.CreationTimestamp.After(since) {
			since = sp.CreationTimestamp.Time
		}
		if !to.After(since) {
			continue
		}
		ran := big.NewRat(int64(to.Sub(since)/time.Millisecond), 1000)
		usage, _ := grantenforcement.Usage(&sp.Spec.Pod, c.Spec.Terms.Resources) // plain resource names: requests, never a limit's error
		for name, q := range usage {
			v := contract.Rat(q)
			if seconds[name] == nil {
				seconds[name] = new(big.Rat)
			}
			seconds[name].Add(seconds[name], v.Mul(v, ran))
		}
	}
	return nil
}

// shadowPods are the alive ShadowPods (neither deleted nor Succeeded nor Failed) of the
// contract's consumer, in its remote namespaces, that come from the virtual node of the slice
// the contract is for (the slice of the contract's name: consts.VirtualNodeName of the
// provider and the slice, or the slice's name, as grantenforcement reads it).
func (r *Reconciler) shadowPods(ctx context.Context, c *marketv1alpha1.Contract) ([]offv1beta1.ShadowPod, error) {
	consumer, slice := c.Labels[consts.ContractConsumerLabel], c.Labels[consts.ContractNameLabel]
	if slice == "" {
		return nil, nil
	}
	nss := &corev1.NamespaceList{}
	if err := r.Client.List(ctx, nss, client.MatchingLabels{consts.RemoteNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}); err != nil {
		return nil, fmt.Errorf("listing the remote namespaces of cluster %s: %w", consumer, err)
	}
	nodes, err := labels.NewRequirement(consts.OriginNodeLabel, selection.In,
		[]string{consts.VirtualNodeName(string(c.Spec.Terms.ProviderClusterID), slice), slice})
	if err != nil {
		return nil, fmt.Errorf("selecting the ShadowPods of slice %s: %w", slice, err)
	}
	var out []offv1beta1.ShadowPod
	for _, ns := range nss.Items {
		list := &offv1beta1.ShadowPodList{}
		if err := r.Client.List(ctx, list, client.InNamespace(ns.Name), client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*nodes)}); err != nil {
			return nil, fmt.Errorf("listing the ShadowPods of cluster %s in %s: %w", consumer, ns.Name, err)
		}
		for _, sp := range list.Items {
			if sp.DeletionTimestamp == nil && sp.Status.Phase != corev1.PodSucceeded && sp.Status.Phase != corev1.PodFailed {
				out = append(out, sp)
			}
		}
	}
	return out, nil
}

// tenantNamespaces are the tenant namespaces of consumer.
func tenantNamespaces(ctx context.Context, c client.Reader, consumer string) ([]string, error) {
	nss := &corev1.NamespaceList{}
	if err := c.List(ctx, nss, client.MatchingLabels{consts.TenantNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}); err != nil {
		return nil, fmt.Errorf("listing the tenant namespaces of cluster %s: %w", consumer, err)
	}
	out := make([]string, 0, len(nss.Items))
	for _, ns := range nss.Items {
		out = append(out, ns.Name)
	}
	return out, nil
}

// parseSeconds reads c's status.resourceSeconds.
func parseSeconds(c *marketv1alpha1.Contract) (map[corev1.ResourceName]*big.Rat, error) {
	out := map[corev1.ResourceName]*big.Rat{}
	for name, d := range c.Status.ResourceSeconds {
		v, ok := new(big.Rat).SetString(string(d))
		if !ok {
			return nil, fmt.Errorf("status.resourceSeconds[%s] %q of contract %s/%s is not a decimal number", name, d, c.Namespace, c.Name)
		}
		out[name] = v
	}
	return out, nil
}

// formatSeconds writes resource-seconds as Decimals with Decimals decimals.
func formatSeconds(seconds map[corev1.ResourceName]*big.Rat) map[corev1.ResourceName]marketv1alpha1.Decimal {
	out := make(map[corev1.ResourceName]marketv1alpha1.Decimal, len(seconds))
	for name, v := range seconds {
		out[name] = marketv1alpha1.Decimal(contract.FormatDecimal(v, Decimals))
	}
	return out
}
