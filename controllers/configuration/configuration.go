// Package configuration reconciles network Configurations: it checks each of the remote
// cluster's CIDRs (a cluster may have several pod CIDRs) against the local cluster's pod (each of
// them), service and external CIDRs and against the CIDRs already used for other peers,
// allocates a remapped CIDR from a pool for each one that overlaps, and reports
// how the local cluster sees the remote one in the Configuration's status. Each remote CIDR also
// gets an ipam.liqo.io Network in the Configuration's namespace, owned by the Configuration (see
// consts.NetworkCIDRTypeLabel): spec.cidr is the remote CIDR, status.cidr the local view of it.
package configuration

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/enqueue"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/cidr"
	"github.com/peerkit/terraform-provider-liqo/internal/clusternet"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// DefaultPool is where remapped CIDRs come from when the Reconciler names no pool.
const DefaultPool = "10.64.0.0/10"

// ReadyCondition is the Configuration condition this reconciler sets: upstream Liqo's, which
// upstream liqoctl waits for.
const ReadyCondition = netv1beta1.ConfigurationConditionNetworkCIDRsConfigured

// Reconciler computes the remapped CIDRs of Configurations.
type Reconciler struct {
	// Client reads the Configurations and Networks and writes the status.
	Client client.Client
	// LocalCIDRs are the local cluster's pod, service and external CIDRs (besides the ones in
	// each Configuration's spec.local and the Networks of the liqo namespace labelled
	// consts.NetworkTypeLabel, read by clusternet.List).
	LocalCIDRs []string
	// Pool is where remapped CIDRs are taken from; empty: DefaultPool.
	Pool []string
	// LiqoNamespace is the namespace Liqo is installed in, where the local cluster's Networks
	// are ("": consts.LiqoNamespace).
	LiqoNamespace string
	// Reader lists the other Configurations when allocating; SetupWithManager makes it the
	// manager's uncached reader. A cached list may not show the remap just written for another
	// peer yet, and two peers would get the same range.
	Reader client.Reader
}

// SetupWithManager registers the reconciler: it runs for every Configuration, when one of its
// Networks changes, and for all of them when one of the local cluster's own Networks changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Reader == nil {
		r.Reader = mgr.GetAPIReader()
	}
	all := enqueue.Listed[*netv1beta1.Configuration](r.Client, func() client.ObjectList { return &netv1beta1.ConfigurationList{} }, nil, nil)
	err := ctrl.NewControllerManagedBy(mgr).
		Named("configuration").
		For(&netv1beta1.Configuration{}).
		Owns(&ipamv1alpha1.Network{}).
		// The local cluster's own Networks are among the CIDRs every Configuration must avoid.
		Watches(&ipamv1alpha1.Network{}, all, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			_, local := o.GetLabels()[consts.NetworkTypeLabel]
			return local
		}))).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the configuration controller: %w", err)
	}
	return nil
}

// Reconcile allocates the remapped CIDRs of one Configuration and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	conf := &netv1beta1.Configuration{}
	if err := r.Client.Get(ctx, req.NamespacedName, conf); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading configuration %s: %w", req.NamespacedName, err)
	}
	if conf.DeletionTimestamp != nil {
		// Going: the garbage collector removes its Networks (in a foreground deletion it waits
		// for them), so nothing is written again.
		return ctrl.Result{}, nil
	}
	used, err := r.usedCIDRs(ctx, conf)
	if err != nil {
		return ctrl.Result{}, err
	}
	pool, err := parseAll(r.poolOrDefault())
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("remapping pool: %w", err)
	}
	prev, err := r.previousRemaps(ctx, conf)
	if err != nil {
		return ctrl.Result{}, err
	}
	pod, ext := conf.Spec.Remote.CIDR.Pod, conf.Spec.Remote.CIDR.External
	mapped, remapped, allocErr := allocate(append(remoteCIDRs(pod, prev.of(consts.PodCIDRType)),
		remoteCIDRs(ext, prev.of(consts.ExternalCIDRType))...), used, pool)
	status := &netv1beta1.ClusterConfig{}
	if allocErr == nil {
		status.CIDR.Pod, status.CIDR.External = mapped[:len(pod):len(pod)], mapped[len(pod):]
		if len(status.CIDR.Pod) == 0 {
			status.CIDR.Pod = nil
		}
		if len(status.CIDR.External) == 0 {
			status.CIDR.External = nil
		}
	}
	cond := metav1.Condition{Type: ReadyCondition, Status: metav1.ConditionTrue, Reason: "NoOverlap",
		Message: "the remote CIDRs do not overlap local ones", ObservedGeneration: conf.Generation}
	switch {
	case allocErr != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "PoolExhausted", allocErr.Error()
		status = conf.Status.Remote
	case len(remapped) > 0:
		cond.Reason, cond.Message = "Remapped", fmt.Sprintf("remapped: %v", remapped)
	}
	before := conf.DeepCopy()
	conf.Status.Remote = status
	meta.SetStatusCondition(&conf.Status.Conditions, cond)
	if !equalStatus(before.Status, conf.Status) {
		if err := r.Client.Status().Update(ctx, conf); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
			}
			return ctrl.Result{}, fmt.Errorf("updating status of configuration %s: %w", req.NamespacedName, err)
		}
		logger.Info("configuration status written", "remapped", remapped, "ready", cond.Status)
	}
	if err := r.syncNetworks(ctx, conf); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, allocErr
}

func (r *Reconciler) poolOrDefault() []string {
	if len(r.Pool) == 0 {
		return []string{DefaultPool}
	}
	return r.Pool
}

// usedCIDRs are the CIDRs a remote network must not overlap: the local cluster's, and those
// already given to other peers.
func (r *Reconciler) usedCIDRs(ctx context.Context, conf *netv1beta1.Configuration) ([]netip.Prefix, error) {
	raw := append([]string(nil), r.LocalCIDRs...)
	if conf.Spec.Local != nil {
		raw = append(raw, cidr.Strings(conf.Spec.Local.CIDR.Pod)...)
		raw = append(raw, cidr.Strings(conf.Spec.Local.CIDR.External)...)
	}
	nets, err := clusternet.ListIn(ctx, r.Client, consts.LiqoNamespaceOr(r.LiqoNamespace))
	if err != nil {
		return nil, fmt.Errorf("reading the local cluster's Networks: %w", err)
	}
	for _, n := range nets {
		// Every typed Network of the liqo namespace: the cluster's own (pod, service, external,
		// whatever their names) and anything else recorded there as in use.
		raw = append(raw, string(n.Spec.CIDR), string(n.Status.CIDR))
	}
	reader := r.Reader
	if reader == nil {
		reader = r.Client
	}
	others := &netv1beta1.ConfigurationList{}
	if err := reader.List(ctx, others); err != nil {
		return nil, fmt.Errorf("listing Configurations: %w", err)
	}
	for _, o := range others.Items {
		if o.Namespace == conf.Namespace && o.Name == conf.Name {
			continue
		}
		// Only what another peer was given: one not allocated yet holds nothing, and counting its
		// spec would let a new peer that asks for an allocated range take it from its holder.
		if o.Status.Remote == nil {
			continue
		}
		raw = append(raw, cidr.Strings(o.Status.Remote.CIDR.Pod)...)
		raw = append(raw, cidr.Strings(o.Status.Remote.CIDR.External)...)
	}
	return parseAll(raw)
}

// remoteCIDR is one remote CIDR to map and its previous remap ("" when none).
type remoteCIDR struct {
	real, prev netv1beta1.CIDR
}

// remoteCIDRs lists spec's remote CIDRs with their previous remaps (prev.of).
func remoteCIDRs(spec []netv1beta1.CIDR, prev func(i int, real netv1beta1.CIDR) netv1beta1.CIDR) []remoteCIDR {
	out := make([]remoteCIDR, len(spec))
	for i, c := range spec {
		out[i] = remoteCIDR{real: c, prev: prev(i, c)}
	}
	return out
}

// allocate maps every remote CIDR of a Configuration (its pod and external CIDRs, one list) to a
// range of the same size that overlaps nothing in used nor the others' ranges. First each keeps
// its previous mapping while that still holds (itself, while free; a remap, while the CIDR still
// overlaps used and the remap is free), so that nothing moves under running traffic when a CIDR
// is added to or dropped from the lists; then each other one maps to itself when free; then each
// still unmapped takes the first free range of pool. It returns the mapped CIDRs, in the order of
// remote, and the remaps made ("real->mapped").
func allocate(remote []remoteCIDR, used, pool []netip.Prefix) ([]netv1beta1.CIDR, []string, error) {
	wants := make([]netip.Prefix, len(remote))
	for i, c := range remote {
		want, err := netip.ParsePrefix(string(c.real))
		if err != nil {
			return nil, nil, fmt.Errorf("remote CIDR %q: %w", c.real, err)
		}
		wants[i] = want.Masked()
	}
	got := make([]netip.Prefix, len(remote))
	taken := slices.Clone(used)
	// take gives the i-th CIDR the range p, if p is of its size and free.
	take := func(i int, p netip.Prefix) {
		if p.IsValid() && p.Bits() == wants[i].Bits() && !overlapsAny(p, taken) {
			got[i] = p
			taken = append(taken, p)
		}
	}
	for i, c := range remote { // the previous mapping, while it holds
		p, err := netip.ParsePrefix(string(c.prev))
		if err != nil {
			continue
		}
		if p = p.Masked(); p == wants[i] || overlapsAny(wants[i], used) {
			take(i, p)
		}
	}
	for i := range remote { // itself, when free
		if !got[i].IsValid() {
			take(i, wants[i])
		}
	}
	var remapped []string
	for i := range remote { // a range of the pool
		if !got[i].IsValid() {
			p, err := firstFree(wants[i].Bits(), taken, pool)
			if err != nil {
				return nil, nil, fmt.Errorf("remapping %s: %w", wants[i], err)
			}
			take(i, p)
		}
		if got[i] != wants[i] {
			remapped = append(remapped, wants[i].String()+"->"+got[i].String())
		}
	}
	out := make([]netv1beta1.CIDR, len(got))
	for i, p := range got {
		out[i] = netv1beta1.CIDR(p.String())
	}
	return out, remapped, nil
}

// firstFree returns the first /bits range of pool that overlaps nothing in used.
func firstFree(bits int, used, pool []netip.Prefix) (netip.Prefix, error) {
	for _, p := range pool {
		if p.Bits() > bits {
			continue
		}
		size := uint64(1) << (32 - bits)
		start := ipToUint(p.Addr())
		end := start + (uint64(1) << (32 - p.Bits()))
		for a := start; a < end; a += size {
			cand := netip.PrefixFrom(uintToIP(a), bits)
			if !overlapsAny(cand, used) {
				return cand, nil
			}
		}
	}
	return netip.Prefix{}, fmt.Errorf("no free /%d left in pool %v", bits, pool)
}

func overlapsAny(p netip.Prefix, set []netip.Prefix) bool {
	return slices.ContainsFunc(set, p.Overlaps)
}

func ipToUint(a netip.Addr) uint64 {
	b := a.As4()
	return uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
}

func uintToIP(v uint64) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24 & 0xff), byte(v >> 16 & 0xff), byte(v >> 8 & 0xff), byte(v & 0xff)})
}

func parseAll(raw []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(raw))
	for _, s := range raw {
		if s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("CIDR %q: %w", s, err)
		}
		if !p.Addr().Is4() {
			continue // IPv4 only for now
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func equalStatus(a, b netv1beta1.ConfigurationStatus) bool {
	if (a.Remote == nil) != (b.Remote == nil) {
		return false
	}
	if a.Remote != nil && (!slices.Equal(a.Remote.CIDR.Pod, b.Remote.CIDR.Pod) || !slices.Equal(a.Remote.CIDR.External, b.Remote.CIDR.External)) {
		return false
	}
	if len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
