// Package fabricfirewall keeps the nodes' source NAT rules of each peering (issue 32, upstream
// Liqo v1.2's internal-network configuration controller): for each Configuration whose peer
// CIDRs are known, the FirewallConfiguration "<configuration>-masquerade-bypass" in its
// namespace, which every node's fabric agent applies: towards the peer's pod and external
// CIDRs, a local pod keeps its own source address (so that the CNI's masquerade leaves it), any
// other source (host network, NodePort) becomes the first address of the local external CIDR.
// It is owned by the Configuration.
package fabricfirewall

import (
	"context"
	"fmt"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/cidr"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// Reconciler keeps a Configuration's fabric SNAT rules.
type Reconciler struct {
	client.Client
	// PodCIDRs and ExternalCIDR are this cluster's, used when a Configuration has no spec.local.
	PodCIDRs     []string
	ExternalCIDR string
}

// +kubebuilder:rbac:groups=networking.liqo.io,resources=configurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.liqo.io,resources=firewallconfigurations,verbs=get;list;watch;create;update;patch;delete

// Reconcile brings the FirewallConfiguration of the Configuration req in line with it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cfg := &netv1beta1.Configuration{}
	if err := r.Get(ctx, req.NamespacedName, cfg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	st := cfg.Status.Remote
	if !cfg.DeletionTimestamp.IsZero() || st == nil || len(st.CIDR.Pod) == 0 || len(st.CIDR.External) == 0 {
		return ctrl.Result{}, nil // the peer's CIDRs are not known yet (or it goes, with what it owns)
	}
	local, ext := r.PodCIDRs, r.ExternalCIDR
	if l := cfg.Spec.Local; l != nil && len(l.CIDR.Pod) > 0 && len(l.CIDR.External) > 0 {
		local, ext = cidr.Strings(l.CIDR.Pod), string(l.CIDR.External[0])
	}
	p, err := netip.ParsePrefix(ext)
	if err != nil || len(local) == 0 {
		return ctrl.Result{}, fmt.Errorf("configuration %s: the local pod CIDRs %v and external CIDR %q are not both valid "+
			"(spec.local, or the manager's --pod-cidr and --external-cidr)", req, local, ext)
	}
	fw := &netv1beta1.FirewallConfiguration{ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: forge.MasqueradeBypassName(cfg)}}
	if _, err := controllerutil.CreateOrPatch(ctx, r.Client, fw, func() error {
		forge.MutateMasqueradeBypass(fw, cfg, forge.MasqueradeBypassOptions{LocalPodCIDRs: local, UnknownSourceIP: p.Masked().Addr().String(),
			RemotePodCIDRs: cidr.Strings(st.CIDR.Pod), RemoteExternalCIDR: string(st.CIDR.External[0])})
		return controllerutil.SetControllerReference(cfg, fw, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing FirewallConfiguration %s/%s of Configuration %s: %w", fw.Namespace, fw.Name, req, err)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler: Configurations and the FirewallConfigurations
// they control.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := ctrl.NewControllerManagedBy(mgr).Named("fabricfirewall").
		For(&netv1beta1.Configuration{}).
		Owns(&netv1beta1.FirewallConfiguration{}).
		Complete(r); err != nil {
		return fmt.Errorf("setting up the fabric firewall controller: %w", err)
	}
	return nil
}
