// Package tethering reconciles, on a tethered cluster's home side, the tethered mode of seed
// 004: while the ConfigMap consts.TetheringConfigMap in the Liqo namespace names a foreign
// cluster X (liqo_peering mode "tethered" writes it), every namespace a tethered cluster
// offloads (internal/tethering.Offloads) gets a NamespaceOffloading that sends its pods to X's
// virtual nodes (forge.MutateTetheredOffloading), labelled as this controller's; a
// NamespaceOffloading of the user's own is left alone. Tethering to X is refused, and nothing
// made, when seed 004's rule forbids it (internal/tethering.Refusal): a Warning Event on the
// ConfigMap says why. When the ConfigMap goes (or names no cluster), the NamespaceOffloadings
// it made are deleted, and the namespaces come home; the user's stay.
package tethering

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	rules "github.com/peerkit/terraform-provider-liqo/internal/tethering"
)

// Reasons of the Events the controller records.
const (
	// ReasonRefused is the Warning Event on the TetheringConfigMap when the tethering is refused.
	ReasonRefused = "TetheringRefused"
	// ReasonUserOffloading is the Normal Event on a Namespace whose NamespaceOffloading is the
	// user's own: the tethering leaves it alone.
	ReasonUserOffloading = "UserOffloadingKept"
)

// Reconciler keeps the NamespaceOffloadings of the tethered mode. Every event maps to one
// request (the TetheringConfigMap's key), which reconciles every namespace: a tethered cluster
// is small.
type Reconciler struct {
	// Client reads and writes the local (home) cluster.
	Client client.Client
	// APIReader reads the TetheringConfigMap and the Tenants uncached (nil: Client), so that
	// the manager does not cache every ConfigMap of the cluster; the controller's watch of
	// ConfigMaps is of their metadata only.
	APIReader client.Reader
	// Recorder records the refusals (on the TetheringConfigMap) and the NamespaceOffloadings of
	// the user's left alone (on their Namespace).
	Recorder events.EventRecorder
	// LiqoNamespace is the namespace Liqo is installed in, which holds the TetheringConfigMap
	// ("": consts.LiqoNamespace).
	LiqoNamespace string

	mu   sync.Mutex
	told map[string]bool // Events recorded already, once each
}

// reader is APIReader, or Client without it.
func (r *Reconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// key is the one request of the controller.
func (r *Reconciler) key() client.ObjectKey {
	return client.ObjectKey{Namespace: consts.LiqoNamespaceOr(r.LiqoNamespace), Name: consts.TetheringConfigMap}
}

// Reconcile brings every namespace's NamespaceOffloading in line with the tethering.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	liqoNS := consts.LiqoNamespaceOr(r.LiqoNamespace)
	to, err := rules.TetheredTo(ctx, r.reader(), liqoNS)
	if err != nil {
		return reconcile.Result{}, err
	}
	nsoffs := &offv1beta1.NamespaceOffloadingList{}
	if err := r.Client.List(ctx, nsoffs); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing NamespaceOffloadings: %w", err)
	}
	byNS := map[string]*offv1beta1.NamespaceOffloading{}
	for i := range nsoffs.Items {
		if n := &nsoffs.Items[i]; n.Name == consts.NamespaceOffloadingName {
			byNS[n.Namespace] = n
		}
	}
	if to == "" {
		return reconcile.Result{}, r.deleteManaged(ctx, byNS, func(string) bool { return true })
	}
	if refusal := rules.Refusal(ctx, r.reader(), liqoNS, to); refusal != nil {
		log.FromContext(ctx).Info("tethering refused: no namespace is offloaded", "foreignCluster", to, "reason", refusal.Error())
		if r.once("refused/" + to + "/" + refusal.Error()) {
			cm := &corev1.ConfigMap{}
			if err := r.reader().Get(ctx, r.key(), cm); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("reading ConfigMap %s: %w", r.key(), err))
			}
			r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, ReasonRefused, "Tether", "%s", refusal.Error())
		}
		return reconcile.Result{}, nil // the Tenants' and the ConfigMap's watches bring it back
	}
	r.forget("refused/") // a refusal coming back is told again
	return reconcile.Result{}, r.tether(ctx, liqoNS, to, byNS)
}

// tether gives every namespace the cluster offloads a NamespaceOffloading to foreign cluster
// to (byNS: the NamespaceOffloadings there are, by namespace), and deletes the managed ones of
// the namespaces it does not offload.
func (r *Reconciler) tether(ctx context.Context, liqoNS, to string, byNS map[string]*offv1beta1.NamespaceOffloading) error {
	nss := &metav1.PartialObjectMetadataList{}
	nss.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.Client.List(ctx, nss); err != nil {
		return fmt.Errorf("listing namespaces: %w", err)
	}
	offloads := map[string]bool{}
	for i := range nss.Items {
		ns := &corev1.Namespace{ObjectMeta: nss.Items[i].ObjectMeta}
		if !rules.Offloads(ns, liqoNS) {
			continue
		}
		offloads[ns.Name] = true
		cur := byNS[ns.Name]
		switch {
		case cur == nil:
			if err := r.create(ctx, ns.Name, to); err != nil {
				return err
			}
		case rules.IsManaged(cur):
			if err := r.update(ctx, cur, to); err != nil {
				return err
			}
		default:
			log.FromContext(ctx).V(1).Info("the namespace's NamespaceOffloading is the user's: left alone", "namespace", ns.Name)
			if r.once("user/" + string(ns.UID) + "/" + to) {
				r.Recorder.Eventf(ns, nil, corev1.EventTypeNormal, ReasonUserOffloading, "Tether",
					"the cluster is tethered to %s, but NamespaceOffloading %s/%s is the user's (no label %s=%s): it is left as it is",
					to, ns.Name, consts.NamespaceOffloadingName, consts.LiqoManagedByLabel, consts.TetheringManagedBy)
			}
		}
	}
	return r.deleteManaged(ctx, byNS, func(ns string) bool { return !offloads[ns] })
}

// create makes the tethered NamespaceOffloading of namespace ns to foreign cluster to.
func (r *Reconciler) create(ctx context.Context, ns, to string) error {
	nsoff := &offv1beta1.NamespaceOffloading{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: consts.NamespaceOffloadingName}}
	forge.MutateTetheredOffloading(nsoff, to)
	if err := r.Client.Create(ctx, nsoff); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating NamespaceOffloading %s/%s (tethered to %s): %w", ns, nsoff.Name, to, err)
	}
	log.FromContext(ctx).Info("namespace offloaded to the foreign cluster", "namespace", ns, "foreignCluster", to)
	return nil
}

// update keeps the spec of a managed NamespaceOffloading the tethered one to foreign cluster to.
func (r *Reconciler) update(ctx context.Context, cur *offv1beta1.NamespaceOffloading, to string) error {
	want := cur.DeepCopy()
	forge.MutateTetheredOffloading(want, to)
	if equality.Semantic.DeepEqual(want.Spec, cur.Spec) {
		return nil
	}
	if err := r.Client.Update(ctx, want); err != nil {
		return fmt.Errorf("updating the spec of NamespaceOffloading %s/%s (tethered to %s): %w", cur.Namespace, cur.Name, to, err)
	}
	return nil
}

// deleteManaged deletes the managed NamespaceOffloadings of byNS in the namespaces gone accepts.
func (r *Reconciler) deleteManaged(ctx context.Context, byNS map[string]*offv1beta1.NamespaceOffloading, gone func(ns string) bool) error {
	for ns, nsoff := range byNS {
		if !rules.IsManaged(nsoff) || !gone(ns) || nsoff.DeletionTimestamp != nil {
			continue
		}
		if err := r.Client.Delete(ctx, nsoff); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting NamespaceOffloading %s/%s (no longer tethered): %w", ns, nsoff.Name, err)
		}
		log.FromContext(ctx).Info("namespace no longer offloaded to the foreign cluster", "namespace", ns)
	}
	return nil
}

// once tells whether the Event of key is to be recorded: the first time only, so that the
// reconciles of every namespace change do not repeat it.
func (r *Reconciler) once(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.told == nil {
		r.told = map[string]bool{}
	}
	if r.told[key] {
		return false
	}
	r.told[key] = true
	return true
}

// forget forgets the Events recorded whose key starts with prefix.
func (r *Reconciler) forget(prefix string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.told {
		if strings.HasPrefix(k, prefix) {
			delete(r.told, k)
		}
	}
}

// SetupWithManager watches the TetheringConfigMap, Namespaces (their labels, creation and
// deletion), NamespaceOffloadings (their spec and labels) and Tenants (seed 004's rule), each
// mapped to the controller's one request.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: r.key()}}
	})
	configMap := predicate.NewPredicateFuncs(func(o client.Object) bool { return client.ObjectKeyFromObject(o) == r.key() })
	offloading := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == consts.NamespaceOffloadingName })
	if err := ctrl.NewControllerManagedBy(mgr).Named("tethering").
		Watches(&corev1.ConfigMap{}, one, builder.WithPredicates(configMap), builder.OnlyMetadata).
		Watches(&corev1.Namespace{}, one, builder.OnlyMetadata).
		Watches(&offv1beta1.NamespaceOffloading{}, one, builder.WithPredicates(offloading,
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&authv1beta1.Tenant{}, one, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r); err != nil {
		return fmt.Errorf("building the tethering controller: %w", err)
	}
	return nil
}
