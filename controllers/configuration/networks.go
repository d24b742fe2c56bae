package configuration

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// NetworkName is the name of the Network standing for the remote CIDR cidr of type cidrType
// (consts.PodCIDRType or consts.ExternalCIDRType) of conf: "<conf>-<type>-<cidr with dashes>".
// Named after the CIDR, not its index, as a Network's spec.cidr cannot change.
func NetworkName(conf *netv1beta1.Configuration, cidrType string, cidr netv1beta1.CIDR) string {
	return conf.Name + "-" + cidrType + "-" + strings.NewReplacer(".", "-", "/", "-", ":", "-").Replace(string(cidr))
}

// wantedNetwork is one remote CIDR of a Configuration and the local view of it.
type wantedNetwork struct {
	cidrType     string
	real, mapped netv1beta1.CIDR
}

// wantedNetworks pairs the Configuration's remote CIDRs (spec) with their local view (status;
// empty while not allocated).
func wantedNetworks(conf *netv1beta1.Configuration) []wantedNetwork {
	var st netv1beta1.ClusterConfigCIDR
	if conf.Status.Remote != nil {
		st = conf.Status.Remote.CIDR
	}
	var out []wantedNetwork
	add := func(typ string, spec, status []netv1beta1.CIDR) {
		for i, c := range spec {
			w := wantedNetwork{cidrType: typ, real: c}
			if i < len(status) {
				w.mapped = status[i]
			}
			out = append(out, w)
		}
	}
	add(consts.PodCIDRType, conf.Spec.Remote.CIDR.Pod, st.Pod)
	add(consts.ExternalCIDRType, conf.Spec.Remote.CIDR.External, st.External)
	return out
}

// syncNetworks makes the Networks of conf match its remote CIDRs: one per CIDR, owned by conf
// (so that they go with it), spec.cidr the remote CIDR and status.cidr how the local cluster sees
// it. Networks of conf for CIDRs it no longer has are deleted.
func (r *Reconciler) syncNetworks(ctx context.Context, conf *netv1beta1.Configuration) error {
	want := wantedNetworks(conf)
	names := map[string]bool{}
	for _, w := range want {
		name := NetworkName(conf, w.cidrType, w.real)
		names[name] = true
		if err := r.ensureNetwork(ctx, conf, name, w); err != nil {
			return err
		}
	}
	list := &ipamv1alpha1.NetworkList{}
	if err := r.Client.List(ctx, list, client.InNamespace(conf.Namespace), client.HasLabels{consts.NetworkCIDRTypeLabel}); err != nil {
		return fmt.Errorf("listing the Networks of configuration %s/%s: %w", conf.Namespace, conf.Name, err)
	}
	for i := range list.Items {
		n := &list.Items[i]
		if names[n.Name] || !metav1.IsControlledBy(n, conf) || !n.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, n); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Network %s/%s, whose CIDR configuration %s no longer has: %w", n.Namespace, n.Name, conf.Name, err)
		}
	}
	return nil
}

func (r *Reconciler) ensureNetwork(ctx context.Context, conf *netv1beta1.Configuration, name string, w wantedNetwork) error {
	n := &ipamv1alpha1.Network{ObjectMeta: metav1.ObjectMeta{Namespace: conf.Namespace, Name: name}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, n, func() error {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[consts.NetworkCIDRTypeLabel] = w.cidrType
		if id := conf.Labels[consts.RemoteClusterIDLabel]; id != "" {
			n.Labels[consts.RemoteClusterIDLabel] = id
		}
		n.Spec.CIDR = w.real
		return controllerutil.SetControllerReference(conf, n, r.Client.Scheme())
	})
	if err != nil {
		return fmt.Errorf("writing Network %s/%s for remote CIDR %s of configuration %s: %w", conf.Namespace, name, w.real, conf.Name, err)
	}
	if n.Status.CIDR == w.mapped {
		return nil
	}
	n.Status.CIDR = w.mapped
	if err := r.Client.Status().Update(ctx, n); err != nil {
		return fmt.Errorf("writing status.cidr %s of Network %s/%s: %w", w.mapped, conf.Namespace, name, err)
	}
	return nil
}

// remaps are how the local cluster saw a Configuration's remote CIDRs before this reconcile.
type remaps struct {
	// byNetwork maps "<type> <remote CIDR>" to the status.cidr of the CIDR's Network.
	byNetwork map[string]netv1beta1.CIDR
	// status is the Configuration's status.remote.cidr.
	status netv1beta1.ClusterConfigCIDR
}

// previousRemaps reads how the local cluster saw conf's remote CIDRs so far: from the Networks
// of conf (one per remote CIDR, named after it, so that a CIDR keeps its remap when another is
// added to or dropped from the list before it) and from its status.
func (r *Reconciler) previousRemaps(ctx context.Context, conf *netv1beta1.Configuration) (remaps, error) {
	out := remaps{byNetwork: map[string]netv1beta1.CIDR{}}
	if conf.Status.Remote != nil {
		out.status = conf.Status.Remote.CIDR
	}
	list := &ipamv1alpha1.NetworkList{}
	if err := r.Client.List(ctx, list, client.InNamespace(conf.Namespace), client.HasLabels{consts.NetworkCIDRTypeLabel}); err != nil {
		return out, fmt.Errorf("listing the Networks of configuration %s/%s: %w", conf.Namespace, conf.Name, err)
	}
	for i := range list.Items {
		n := &list.Items[i]
		if metav1.IsControlledBy(n, conf) && n.DeletionTimestamp.IsZero() && n.Status.CIDR != "" {
			out.byNetwork[n.Labels[consts.NetworkCIDRTypeLabel]+" "+string(n.Spec.CIDR)] = n.Status.CIDR
		}
	}
	return out, nil
}

// of returns, for the remote CIDRs of type cidrType, the previous remap of the i-th one, real:
// its Network's status.cidr; when conf has no Network with a remap at all (as after an upgrade
// from a version that wrote none), the i-th CIDR of the status. A CIDR new to a list whose
// others have Networks has none: it must not take the range of the CIDR that was at its index.
func (p remaps) of(cidrType string) func(i int, real netv1beta1.CIDR) netv1beta1.CIDR {
	status := p.status.Pod
	if cidrType == consts.ExternalCIDRType {
		status = p.status.External
	}
	return func(i int, real netv1beta1.CIDR) netv1beta1.CIDR {
		if c, ok := p.byNetwork[cidrType+" "+string(real)]; ok {
			return c
		}
		if len(p.byNetwork) == 0 && i < len(status) {
			return status[i]
		}
		return ""
	}
}
