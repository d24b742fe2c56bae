// Package tethering holds the tethered mode's rules that the provider and the controller
// manager share: which namespaces a tethered cluster offloads, the NamespaceOffloading it gives
// them, and the TetheringConfigMap that says a cluster is tethered.
package tethering

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// systemNamespaces are never offloaded: Kubernetes' own.
var systemNamespaces = map[string]bool{"kube-system": true, "kube-public": true, "kube-node-lease": true}

// Offloads tells whether a tethered cluster offloads namespace ns: every namespace but
// Kubernetes' own (kube-system, kube-public, kube-node-lease), Liqo's (liqoNamespace, those
// whose name starts with "liqo", the tenant namespaces) and the remote namespaces it holds for
// a consumer (the foreign cluster's offloaded namespaces: offloading them back would loop), and
// none that is being deleted.
func Offloads(ns *corev1.Namespace, liqoNamespace string) bool {
	switch {
	case ns.DeletionTimestamp != nil, systemNamespaces[ns.Name], ns.Name == consts.LiqoNamespaceOr(liqoNamespace),
		strings.HasPrefix(ns.Name, "liqo"), ns.Labels[consts.TenantNamespaceLabel] == "true",
		ns.Labels[consts.RemoteNamespaceLabel] == "true":
		return false
	}
	return true
}

// IsManaged tells whether nsoff was made by the tethering controller.
func IsManaged(nsoff *offv1beta1.NamespaceOffloading) bool {
	return nsoff.Labels[consts.LiqoManagedByLabel] == consts.TetheringManagedBy
}

// Refusal says why the cluster c cannot be tethered to foreignID (nil when it can), by seed
// 004's rule: "the transition from Autonomous to Tethered mode is allowed only in presence of
// at most one peering in which the local cluster is offering resources", that peering being
// the one with the foreign cluster; and a cluster is tethered to one foreign cluster at most.
func Refusal(ctx context.Context, c client.Reader, liqoNamespace, foreignID string) error {
	if to, err := TetheredTo(ctx, c, liqoNamespace); err != nil {
		return err
	} else if to != "" && to != foreignID {
		return fmt.Errorf("the cluster is tethered to %s already (ConfigMap %s/%s): end that tethering first (its liqo_peering's mode = \"autonomous\", or destroy it)",
			to, consts.LiqoNamespaceOr(liqoNamespace), consts.TetheringConfigMap)
	}
	var tenants authv1beta1.TenantList
	if err := c.List(ctx, &tenants); err != nil {
		return fmt.Errorf("listing the Tenants (the consumers this cluster offers resources to): %w", err)
	}
	for _, t := range tenants.Items {
		if id := string(t.Spec.ClusterID); id != foreignID {
			return fmt.Errorf("the cluster offers resources to %s (Tenant %s/%s): a tethered cluster offers resources to its foreign cluster only; unpeer %s first",
				id, t.Namespace, t.Name, id)
		}
	}
	return nil
}

// TetheredTo returns the ID of the foreign cluster the cluster c is tethered to, "" when it is
// not tethered.
func TetheredTo(ctx context.Context, c client.Reader, liqoNamespace string) (string, error) {
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: consts.LiqoNamespaceOr(liqoNamespace), Name: consts.TetheringConfigMap}
	if err := c.Get(ctx, key, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("reading ConfigMap %s: %w", key, err)
	}
	return cm.Data[consts.TetheredClusterIDKey], nil
}

// ConfigMap is the TetheringConfigMap that tethers a cluster to foreignID.
func ConfigMap(liqoNamespace, foreignID string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespaceOr(liqoNamespace), Name: consts.TetheringConfigMap},
		Data:       map[string]string{consts.TetheredClusterIDKey: foreignID},
	}
}

// NotOffloaded lists the namespaces of the cluster c that a tethering to foreignID offloads
// and whose offloading is not Ready yet (its NamespaceOffloading missing or in another phase),
// each with what was seen: empty once every such namespace runs its pods on the foreign cluster.
func NotOffloaded(ctx context.Context, c client.Reader, liqoNamespace string) ([]string, error) {
	var nss corev1.NamespaceList
	if err := c.List(ctx, &nss); err != nil {
		return nil, fmt.Errorf("listing the namespaces: %w", err)
	}
	var out []string
	for i := range nss.Items {
		ns := &nss.Items[i]
		if !Offloads(ns, liqoNamespace) {
			continue
		}
		nsoff := &offv1beta1.NamespaceOffloading{}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: consts.NamespaceOffloadingName}, nsoff)
		switch {
		case apierrors.IsNotFound(err):
			out = append(out, ns.Name+" (no NamespaceOffloading yet)")
		case err != nil:
			return nil, fmt.Errorf("reading the NamespaceOffloading of namespace %s: %w", ns.Name, err)
		case nsoff.Status.OffloadingPhase != offv1beta1.ReadyOffloadingPhaseType:
			out = append(out, fmt.Sprintf("%s (offloading phase %q)", ns.Name, nsoff.Status.OffloadingPhase))
		}
	}
	return out, nil
}

// NotHome lists what keeps the cluster c's workloads on the foreign cluster foreignID once a
// tethering ended: the tethering controller's NamespaceOffloadings, and the pods still running
// (or about to) on a virtual node of foreignID but those of namespaces the user offloads (with a
// NamespaceOffloading of their own); empty once everything is home. The pods the virtual
// kubelet released when their namespace came home (phase Failed) are Released's.
func NotHome(ctx context.Context, c client.Reader, foreignID string) ([]string, error) {
	var nsoffs offv1beta1.NamespaceOffloadingList
	if err := c.List(ctx, &nsoffs, client.MatchingLabels{consts.LiqoManagedByLabel: consts.TetheringManagedBy}); err != nil {
		return nil, fmt.Errorf("listing the tethering's NamespaceOffloadings: %w", err)
	}
	var out []string
	for _, n := range nsoffs.Items {
		out = append(out, "NamespaceOffloading "+n.Namespace+"/"+n.Name)
	}
	pods, err := onForeignNodes(ctx, c, foreignID)
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if !terminated(&p) {
			out = append(out, "pod "+p.Namespace+"/"+p.Name+" on virtual node "+p.Spec.NodeName)
		}
	}
	return out, nil
}

// Released lists the pods a tethering to foreignID leaves behind once it ended: those on a
// virtual node of foreignID, in a namespace the user does not offload, that ended there (the
// virtual kubelet fails them when their namespace comes home) and that a controller owns, so
// that a replacement runs at home: deleting them loses nothing. A bare pod is not listed.
func Released(ctx context.Context, c client.Reader, foreignID string) ([]corev1.Pod, error) {
	pods, err := onForeignNodes(ctx, c, foreignID)
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range pods {
		if terminated(&p) && metav1.GetControllerOf(&p) != nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// terminated tells whether pod p ended (Succeeded or Failed).
func terminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// onForeignNodes lists the pods bound to a virtual node of foreignID, but those of namespaces
// the user offloads with a NamespaceOffloading of their own.
func onForeignNodes(ctx context.Context, c client.Reader, foreignID string) ([]corev1.Pod, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels{consts.TypeLabel: consts.VirtualNodeType, consts.RemoteClusterIDLabel: foreignID}); err != nil {
		return nil, fmt.Errorf("listing the virtual nodes of %s: %w", foreignID, err)
	}
	var out []corev1.Pod
	for _, node := range nodes.Items {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.MatchingFields{"spec.nodeName": node.Name}); err != nil {
			return nil, fmt.Errorf("listing the pods on virtual node %s: %w", node.Name, err)
		}
		for _, p := range pods.Items {
			nsoff := &offv1beta1.NamespaceOffloading{}
			err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: consts.NamespaceOffloadingName}, nsoff)
			if err == nil && !IsManaged(nsoff) {
				continue // the user's own offloading
			}
			out = append(out, p)
		}
	}
	return out, nil
}
