// Package contractmetering meters, on the provider, what a consumer's offloaded pods use under
// its contracts (seed 004's obligations): every Interval, for each of the provider's own copies
// of a Contract (in its Liqo namespace, labelled consts.ContractConsumerLabel) that is Signed or
// Expired and not metered up to its end, the ShadowPods of the consumer (in its remote
// namespaces) that come from the contract's slice's virtual node (consts.OriginNodeLabel) and
// are alive add their requests (grantenforcement.Usage of the contracted resources) times the
// time they ran since the last metering, within the contract's period, to
// status.resourceSeconds; status.accruedCost is then, exactly (math/big), the sum over the
// resources of resourceSeconds / 3600 × amount / unit × price. Both, and status.lastMetered, go
// on the provider's copy and on the consumer's Contract in its tenant namespace (which the
// replication brings back to the consumer). Times are whole seconds, as the API stores them.
//
// Exporter sets the Prometheus gauges liqo_contract_accrued_cost and
// liqo_contract_resource_seconds from the status of the Contracts a cluster keeps: on the
// provider its own copies, on the consumer its own Contracts.
package contractmetering

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
)

// DefaultInterval is how often a contract is metered by default.
const DefaultInterval = 30 * time.Second

// Decimals is the number of decimals of the metered amounts written in the status.
const Decimals = 6

// Reconciler meters the provider's own copies of Contracts.
type Reconciler struct {
	// Client reads and writes the provider cluster.
	Client client.Client
	// LiqoNamespace holds the provider's copies ("": consts.LiqoNamespace).
	LiqoNamespace string
	// Interval is how often a contract is metered (0: DefaultInterval).
	Interval time.Duration
}

// Reconcile meters one provider's copy of a Contract, when its interval has passed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c := &marketv1alpha1.Contract{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil || c.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if c.Labels[consts.ContractConsumerLabel] == "" ||
		(c.Status.Phase != marketv1alpha1.ContractSigned && c.Status.Phase != marketv1alpha1.ContractExpired) {
		return reconcile.Result{}, nil
	}
	now := time.Now().Truncate(time.Second)
	start, end := c.Spec.Terms.Start.Time, c.Spec.Terms.End.Time
	from := start
	if c.Status.LastMetered != nil && c.Status.LastMetered.After(from) {
		from = c.Status.LastMetered.Time
	}
	to := now
	if end.Before(to) {
		to = end
	}
	switch {
	case now.Before(start):
		return reconcile.Result{RequeueAfter: start.Sub(now)}, nil
	case !to.After(from) && !to.Before(end):
		return reconcile.Result{}, nil // metered up to its end
	case !to.After(from):
		return reconcile.Result{RequeueAfter: r.interval()}, nil // metered up to now (this very second): nothing yet
	case c.Status.LastMetered != nil && now.Sub(c.Status.LastMetered.Time) < r.interval() && to.Before(end):
		return reconcile.Result{RequeueAfter: r.interval() - now.Sub(c.Status.LastMetered.Time)}, nil
	}
	seconds, err := parseSeconds(c)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.meter(ctx, c, seconds, from, to); err != nil {
		return reconcile.Result{}, err
	}
	status := marketv1alpha1.ContractStatus{ResourceSeconds: formatSeconds(seconds), LastMetered: &metav1.Time{Time: now}}
	cost, err := contract.Cost(&c.Spec.Terms, seconds)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("metering contract %s: %w", req, err)
	}
	status.AccruedCost = marketv1alpha1.Decimal(contract.FormatDecimal(cost, Decimals))
	if err := r.write(ctx, c, &status); err != nil {
		return reconcile.Result{}, err
	}
	if !to.Before(end) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: r.interval()}, nil
}

func (r *Reconciler) interval() time.Duration {
	if r.Interval > 0 {
		return r.Interval
	}
	return DefaultInterval
}

// write sets the metered fields of status on the provider's copy c and on the consumer's
// Contract in its tenant namespaces (same name as consts.ContractNameLabel), when there.
func (r *Reconciler) write(ctx context.Context, c *marketv1alpha1.Contract, status *marketv1alpha1.ContractStatus) error {
	if err := r.patchStatus(ctx, c, status); err != nil {
		return err
	}
	consumer, name := c.Labels[consts.ContractConsumerLabel], c.Labels[consts.ContractNameLabel]
	if name == "" {
		return nil
	}
	nss, err := tenantNamespaces(ctx, r.Client, consumer)
	if err != nil {
		return err
	}
	for _, ns := range nss {
		tc := &marketv1alpha1.Contract{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, tc); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("reading contract %s/%s of cluster %s: %w", ns, name, consumer, err)
		}
		if err := r.patchStatus(ctx, tc, status); err != nil {
			return err
		}
	}
	return nil
}

// patchStatus writes the metered fields of status (and only those) into c's status.
func (r *Reconciler) patchStatus(ctx context.Context, c *marketv1alpha1.Contract, status *marketv1alpha1.ContractStatus) error {
	before := c.DeepCopy()
	c.Status.ResourceSeconds, c.Status.AccruedCost, c.Status.LastMetered = status.ResourceSeconds, status.AccruedCost, status.LastMetered
	if err := r.Client.Status().Patch(ctx, c, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("writing the metered status (accruedCost, resourceSeconds, lastMetered) of contract %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// SetupWithManager watches the provider's copies of Contracts in the Liqo namespace: created,
// their spec changed (a renewal) or their phase (signed); each is then metered every Interval.
// Its own writes of the status do not trigger it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == consts.LiqoNamespaceOr(r.LiqoNamespace) && o.GetLabels()[consts.ContractConsumerLabel] != ""
	})
	err := ctrl.NewControllerManagedBy(mgr).Named("contractmetering").
		For(&marketv1alpha1.Contract{}, builder.WithPredicates(ours, predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, phaseChanged))).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the contract metering controller: %w", err)
	}
	return nil
}

// phaseChanged passes the updates that change a Contract's phase.
var phaseChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, okOld := e.ObjectOld.(*marketv1alpha1.Contract)
	n, okNew := e.ObjectNew.(*marketv1alpha1.Contract)
	return okOld && okNew && o.Status.Phase != n.Status.Phase
}}
