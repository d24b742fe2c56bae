package contractmetering

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// contractLabels are the labels of both gauges: who, which contract (its name in the
// consumer's tenant namespace, the same on both sides) and, for AccruedCost, the currency.
var contractLabels = []string{"consumer_cluster_id", "provider_cluster_id", "contract", "currency"}

var (
	// AccruedCost is the cost a contract accrued so far (status.accruedCost), in its currency.
	AccruedCost = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "liqo_contract_accrued_cost",
		Help: "The cost a contract accrued so far (status.accruedCost), in its currency."}, contractLabels)
	// ResourceSeconds is, per resource, what a contract metered so far (status.resourceSeconds).
	ResourceSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "liqo_contract_resource_seconds",
		Help: "What a contract's offloaded pods requested of a resource integrated over their lifetimes (status.resourceSeconds)."},
		append(append([]string{}, contractLabels...), "resource"))
)

func init() {
	metrics.Registry.MustRegister(AccruedCost, ResourceSeconds)
}

// Exporter sets AccruedCost and ResourceSeconds from the status of the Contracts this cluster
// keeps: the provider's own copies (labelled consts.ContractConsumerLabel) and the consumer's own
// Contracts (labelled consts.ReplicationLabel "true"); not the consumer's Contracts replicated
// to a provider's tenant namespace, whose copy the provider exports.
type Exporter struct {
	// Client reads the cluster.
	Client client.Client

	mu       sync.Mutex
	exported map[types.NamespacedName][]string // the label values set for each contract
}

// Reconcile exports one Contract's status, or removes its series when it is gone.
func (e *Exporter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c := &marketv1alpha1.Contract{}
	err := e.Client.Get(ctx, req.NamespacedName, c)
	if client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("reading contract %s: %w", req, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.exported == nil {
		e.exported = map[types.NamespacedName][]string{}
	}
	if old, ok := e.exported[req.NamespacedName]; ok {
		AccruedCost.DeleteLabelValues(old...)
		ResourceSeconds.DeletePartialMatch(prometheus.Labels{"consumer_cluster_id": old[0], "provider_cluster_id": old[1], "contract": old[2]})
		delete(e.exported, req.NamespacedName)
	}
	if err != nil || c.DeletionTimestamp != nil || !exported(c) {
		return reconcile.Result{}, nil
	}
	name := c.Labels[consts.ContractNameLabel]
	if name == "" {
		name = c.Name
	}
	values := []string{string(c.Spec.Terms.ConsumerClusterID), string(c.Spec.Terms.ProviderClusterID), name, string(c.Spec.Terms.Currency)}
	e.exported[req.NamespacedName] = values
	if v, err := strconv.ParseFloat(string(c.Status.AccruedCost), 64); err == nil {
		AccruedCost.WithLabelValues(values...).Set(v)
	}
	for res, d := range c.Status.ResourceSeconds {
		if v, err := strconv.ParseFloat(string(d), 64); err == nil {
			ResourceSeconds.WithLabelValues(append(append([]string{}, values...), string(res))...).Set(v)
		}
	}
	return reconcile.Result{}, nil
}

// exported tells whether c is a Contract this cluster exports.
func exported(c client.Object) bool {
	l := c.GetLabels()
	return l[consts.ContractConsumerLabel] != "" || l[consts.ReplicationLabel] == "true"
}

// SetupWithManager watches the Contracts the exporter exports.
func (e *Exporter) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).Named("contractmetrics").
		For(&marketv1alpha1.Contract{}, builder.WithPredicates(predicate.NewPredicateFuncs(exported))).
		Complete(e)
	if err != nil {
		return fmt.Errorf("building the contract metrics exporter: %w", err)
	}
	return nil
}
