// Package clusternet names and reads a cluster's own networks: the ipam.liqo.io Networks of
// namespace liqo that hold its pod (one Network per pod CIDR: a cluster may have several),
// service and external CIDRs, with upstream Liqo v1.2's names and labels (its chart's
// liqo-ipam-networks.yaml; see internal/consts). Spec.Networks builds
// them; List, PodCIDRs, PodCIDR and ExternalCIDR read them back the way upstream's tools do: by
// type label, never by name, leaving out the Networks that stand for a peer's CIDRs (labelled
// liqo.io/remote-cluster-id).
package clusternet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// DefaultExternalCIDR is the external CIDR of a cluster whose user sets none: upstream's chart's
// default. Its Network is then not labelled consts.NetworkNotRemappedLabel.
const DefaultExternalCIDR = "10.70.0.0/16"

// Spec is what a cluster declares of its own networks. An empty CIDR has no Network.
type Spec struct {
	// PodCIDR, ServiceCIDR and ExternalCIDR are the cluster's networks, e.g. 10.244.0.0/16.
	// PodCIDR is the first pod CIDR of a cluster that has one; PodCIDRs holds the others, or
	// all of them (upstream Liqo v1.2's podCIDRs).
	PodCIDR, ServiceCIDR, ExternalCIDR string
	// PodCIDRs are the cluster's pod CIDRs besides PodCIDR (one Network each; one given twice
	// has one Network).
	PodCIDRs []string
	// ExternalCIDRDefaulted says that ExternalCIDR is a default (DefaultExternalCIDR), not a CIDR
	// the user set: as in upstream's chart, its Network is then not marked not-remapped.
	ExternalCIDRDefaulted bool
	// InternalCIDR is the network fabric's internal CIDR (upstream's internal-cidr Network);
	// InternalCIDRDefaulted says it is the default, not labelled not-remapped (upstream's chart).
	InternalCIDR          string
	InternalCIDRDefaulted bool
	// Namespace is where the Networks are: the namespace Liqo is installed in ("":
	// consts.LiqoNamespace).
	Namespace string
}

// AllPodCIDRs are the pod CIDRs of spec: PodCIDR (when set), then PodCIDRs, each once.
func (s Spec) AllPodCIDRs() []string {
	var out []string
	for _, c := range append([]string{s.PodCIDR}, s.PodCIDRs...) {
		if c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// Networks returns the Networks of spec's non-empty CIDRs, as upstream's chart writes them:
// one per pod CIDR (AllPodCIDRs), named consts.PodCIDRNetworkName(cidr); consts.ServiceCIDRNetwork and
// consts.ExternalCIDRNetwork in spec.Namespace; labelled with their type, the pod and
// service CIDRs as not remapped and shared, the external CIDR as not remapped unless defaulted;
// the CIDR in spec.cidr (status is left to the caller).
func (s Spec) Networks() []*ipamv1alpha1.Network {
	var out []*ipamv1alpha1.Network
	add := func(name, typ, cidr string, notRemapped, shared bool) {
		if cidr == "" {
			return
		}
		labels := map[string]string{consts.NetworkTypeLabel: typ}
		if notRemapped {
			labels[consts.NetworkNotRemappedLabel] = "true"
		}
		if shared {
			labels[consts.NetworkSharedLabel] = "true"
		}
		out = append(out, &ipamv1alpha1.Network{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace(), Name: name, Labels: labels},
			Spec:       ipamv1alpha1.NetworkSpec{CIDR: netv1beta1.CIDR(cidr)},
		})
	}
	for _, pod := range s.AllPodCIDRs() {
		add(consts.PodCIDRNetworkName(pod), consts.PodCIDRNetwork, pod, true, true)
	}
	add(consts.ServiceCIDRNetwork, consts.ServiceCIDRNetwork, s.ServiceCIDR, true, true)
	add(consts.ExternalCIDRNetwork, consts.ExternalCIDRNetwork, s.ExternalCIDR, !s.ExternalCIDRDefaulted, false)
	add(consts.InternalCIDRNetwork, consts.InternalCIDRNetwork, s.InternalCIDR, !s.InternalCIDRDefaulted, false)
	return out
}

// namespace is where the Networks are.
func (s Spec) namespace() string {
	if s.Namespace == "" {
		return consts.LiqoNamespace
	}
	return s.Namespace
}

// LabelKeys are the label keys Spec.Networks sets or leaves out on purpose: a Network kept after
// one of Networks' output has these of its labels exactly as that one, and others as they are.
func LabelKeys() []string {
	return []string{consts.NetworkTypeLabel, consts.NetworkNotRemappedLabel, consts.NetworkSharedLabel}
}

// List returns the Networks of consts.LiqoNamespace labelled with a type (consts.NetworkTypeLabel),
// in name order: the cluster's own and any a peer's that live there. PodCIDRs, PodCIDR and
// ExternalCIDR pick the cluster's own among them.
func List(ctx context.Context, r client.Reader) ([]ipamv1alpha1.Network, error) {
	return ListIn(ctx, r, consts.LiqoNamespace)
}

// ListIn is List for a cluster whose Liqo is installed in namespace.
func ListIn(ctx context.Context, r client.Reader, namespace string) ([]ipamv1alpha1.Network, error) {
	list := &ipamv1alpha1.NetworkList{}
	if err := r.List(ctx, list, client.InNamespace(namespace), client.HasLabels{consts.NetworkTypeLabel}); err != nil {
		return nil, fmt.Errorf("listing the Networks of namespace %s labelled %s: %w", namespace, consts.NetworkTypeLabel, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

// Own returns the cluster's own Networks of type typ among items (the Networks of its Liqo
// namespace, as List and ListIn return them), in name order: labelled
// consts.NetworkTypeLabel=typ and not a peer's (no consts.RemoteClusterIDLabel).
func Own(items []ipamv1alpha1.Network, typ string) []ipamv1alpha1.Network {
	var out []ipamv1alpha1.Network
	for _, n := range items {
		if n.Labels[consts.NetworkTypeLabel] == typ && n.Labels[consts.RemoteClusterIDLabel] == "" {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// CIDR is the CIDR a Network stands for: status.cidr (the one in use), else spec.cidr (not
// reported yet).
func CIDR(n *ipamv1alpha1.Network) string {
	if n.Status.CIDR != "" {
		return string(n.Status.CIDR)
	}
	return string(n.Spec.CIDR)
}

// PodCIDRs returns the cluster's pod CIDRs among items: the CIDR of each of its own pod-cidr
// Networks, in name order (the order upstream's tools list them in), each CIDR once (an old Network being replaced may hold the same
// CIDR as its successor). None: an empty list.
func PodCIDRs(items []ipamv1alpha1.Network) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range Own(items, consts.PodCIDRNetwork) {
		if c := CIDR(&n); c != "" && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// PodCIDR returns the cluster's one pod CIDR among items ("" when it has none), for a reader
// that holds a single one; an error naming the Networks when they hold several (PodCIDRs reads
// them all).
func PodCIDR(items []ipamv1alpha1.Network) (string, error) {
	cidrs := PodCIDRs(items)
	switch len(cidrs) {
	case 0:
		return "", nil
	case 1:
		return cidrs[0], nil
	}
	return "", fmt.Errorf("the cluster has %d pod CIDRs (%s), not one", len(cidrs), describe(Own(items, consts.PodCIDRNetwork)))
}

// ExternalCIDR returns the cluster's external CIDR among items: the CIDR of its one own
// external-cidr Network ("" when there is none); an error naming the Networks when there are
// several.
func ExternalCIDR(items []ipamv1alpha1.Network) (string, error) {
	own := Own(items, consts.ExternalCIDRNetwork)
	switch len(own) {
	case 0:
		return "", nil
	case 1:
		return CIDR(&own[0]), nil
	}
	return "", fmt.Errorf("the cluster has %d external CIDR Networks (%s), not one: keep one", len(own), describe(own))
}

// ErrNoPodCIDR says a cluster declares no pod CIDR: it has no Network of its own labelled as one.
var ErrNoPodCIDR = errors.New("no Network of namespace " + consts.LiqoNamespace + " labelled " + consts.NetworkTypeLabel + "=" +
	consts.PodCIDRNetwork + " (its controller manager's --pod-cidr flag)")

// Declared is what a cluster's own Networks say of its networks.
type Declared struct {
	// PodCIDRs are its pod CIDRs (PodCIDRs), none when it declares none.
	PodCIDRs []string
	// ExternalCIDR is its external CIDR (ExternalCIDR), "" when it declares none.
	ExternalCIDR string
}

// ExternalCIDRs is the external CIDR as a list: none, or one.
func (o Declared) ExternalCIDRs() []string {
	if o.ExternalCIDR == "" {
		return nil
	}
	return []string{o.ExternalCIDR}
}

// Read reads a cluster's own networks from its Networks (List, PodCIDRs, ExternalCIDR): what
// its Configuration on a peer holds. Several external-cidr Networks are an error.
func Read(ctx context.Context, r client.Reader) (Declared, error) {
	return ReadIn(ctx, r, consts.LiqoNamespace)
}

// ReadIn is Read for a cluster whose Liqo is installed in namespace.
func ReadIn(ctx context.Context, r client.Reader, namespace string) (Declared, error) {
	nets, err := ListIn(ctx, r, namespace)
	if err != nil {
		return Declared{}, err
	}
	ext, err := ExternalCIDR(nets)
	if err != nil {
		return Declared{}, err
	}
	return Declared{PodCIDRs: PodCIDRs(nets), ExternalCIDR: ext}, nil
}

// describe names Networks for an error: "Network liqo/a (10.0.0.0/16), ..." and the label they
// were found by.
func describe(nets []ipamv1alpha1.Network) string {
	parts := make([]string, len(nets))
	for i := range nets {
		parts[i] = fmt.Sprintf("Network %s/%s (%s)", nets[i].Namespace, nets[i].Name, CIDR(&nets[i]))
	}
	typ := ""
	if len(nets) > 0 {
		typ = nets[0].Labels[consts.NetworkTypeLabel]
	}
	return fmt.Sprintf("%s, labelled %s=%s", strings.Join(parts, ", "), consts.NetworkTypeLabel, typ)
}
