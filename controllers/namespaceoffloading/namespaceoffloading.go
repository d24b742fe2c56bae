// Package namespaceoffloading reconciles NamespaceOffloadings on the consumer. For the
// NamespaceOffloading named offloading in namespace X, it selects the providers whose virtual
// nodes match spec.clusterSelector and writes desiredMapping[X] = <remote name> into the
// NamespaceMap of each selected provider (in the consumer's tenant namespace for it); the
// replication controller carries the map to the provider, whose namespacemap controller creates
// the remote namespace and reports it in the map's status, which comes back and becomes the
// NamespaceOffloading's status. X is withdrawn from the maps of providers no longer selected,
// and from all of them when the NamespaceOffloading is deleted; a finalizer keeps it until the
// remote namespaces are gone, except on providers declared gone for good (the ForeignCluster
// annotation liqo.io/peer-gone=true).
package namespaceoffloading

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/enqueue"
	"github.com/peerkit/terraform-provider-liqo/controllers/internal/finalizers"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// Finalizer keeps a NamespaceOffloading until its remote namespaces are gone.
const Finalizer = "offloading.liqo.io/namespace-offloading"

// Reasons of the remote namespace conditions.
const (
	ReasonClusterSelected     = "ClusterSelected"
	ReasonClusterNotSelected  = "ClusterNotSelected"
	ReasonNamespaceCreated    = "RemoteNamespaceCreated"
	ReasonCreationFailed      = "CreationLoopBackOff"
	ReasonInProgress          = "InProgress"
	ReasonNoTenantNamespace   = "NoTenantNamespace"
	ReasonTerminating         = "Terminating"
	ReasonInvalidSelector     = "InvalidClusterSelector"
	conditionMessageCreated   = "namespace %s exists on the provider and the consumer's workloads may run there"
	conditionMessageNoTenant  = "no tenant namespace (labels liqo.io/tenant-namespace=true, liqo.io/remote-cluster-id=%s) on this cluster: peer the clusters first"
	conditionMessageFailed    = "the provider could not create namespace %s: see the Events of the NamespaceMap in its tenant namespace; the name may be taken, choose another one (namespaceMappingStrategy DefaultName or SelectedName)"
	conditionMessageWaiting   = "waiting for the provider to create namespace %s"
	conditionMessageRemoving  = "the remote namespace %s is being deleted"
	conditionMessageSelected  = "a virtual node of the cluster matches the cluster selector"
	conditionMessageDeselect  = "no virtual node of the cluster matches the cluster selector"
	conditionMessageOffloaded = "the namespace is being withdrawn from the cluster"
)

// Reconciler reconciles NamespaceOffloadings.
type Reconciler struct {
	// Client reads and writes the local (consumer) cluster.
	Client client.Client
	// LocalClusterID is this cluster's ID, part of the DefaultName remote names.
	LocalClusterID corev1beta1.ClusterID
	// APIReader reads the API server directly, not the cache: whether a provider still has a
	// virtual node before its NamespaceMap is created. Nil: Client.
	APIReader client.Reader
}

// RemoteName is the name of the remote namespaces of local namespace ns by the spec's mapping strategy.
func RemoteName(spec *offv1beta1.NamespaceOffloadingSpec, ns string, consumer corev1beta1.ClusterID) string {
	switch spec.NamespaceMappingStrategy {
	case offv1beta1.EnforceSameNameMappingStrategyType:
		return ns
	case offv1beta1.SelectedNameMappingStrategyType:
		return spec.RemoteNamespaceName
	default:
		return ns + "-" + string(consumer)
	}
}

// world is what one reconcile reads of the cluster.
type world struct {
	virtualNodes []metav1.PartialObjectMetadata
	tenants      map[corev1beta1.ClusterID]string // provider -> tenant namespace
	maps         map[corev1beta1.ClusterID]*offv1beta1.NamespaceMap
	gone         map[corev1beta1.ClusterID]bool // providers declared gone for good
}

func (r *Reconciler) read(ctx context.Context) (*world, error) {
	w := &world{tenants: map[corev1beta1.ClusterID]string{}, maps: map[corev1beta1.ClusterID]*offv1beta1.NamespaceMap{},
		gone: map[corev1beta1.ClusterID]bool{}}
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.Client.List(ctx, nodes, client.MatchingLabels{consts.TypeLabel: consts.VirtualNodeType}); err != nil {
		return nil, fmt.Errorf("listing virtual nodes: %w", err)
	}
	w.virtualNodes = nodes.Items
	nss := &metav1.PartialObjectMetadataList{}
	nss.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.Client.List(ctx, nss, client.MatchingLabels{consts.TenantNamespaceLabel: "true"}); err != nil {
		return nil, fmt.Errorf("listing tenant namespaces: %w", err)
	}
	for _, ns := range nss.Items {
		if id := ns.Labels[consts.RemoteClusterIDLabel]; id != "" && ns.DeletionTimestamp == nil {
			w.tenants[corev1beta1.ClusterID(id)] = ns.Name
		}
	}
	maps := &offv1beta1.NamespaceMapList{}
	if err := r.Client.List(ctx, maps, client.MatchingLabels{consts.ReplicationLabel: "true"}); err != nil {
		return nil, fmt.Errorf("listing NamespaceMaps: %w", err)
	}
	for i := range maps.Items {
		m := &maps.Items[i]
		id := corev1beta1.ClusterID(m.Labels[consts.RemoteClusterIDLabel])
		if id == "" || (w.tenants[id] != "" && m.Namespace != w.tenants[id]) {
			continue // not a map of a provider's tenant namespace
		}
		if prev, ok := w.maps[id]; !ok || m.Name < prev.Name {
			w.maps[id] = m // one map per tenant namespace; the first by name if there are more
		}
	}
	fcs := &corev1beta1.ForeignClusterList{}
	if err := r.Client.List(ctx, fcs); err != nil {
		return nil, fmt.Errorf("listing ForeignClusters: %w", err)
	}
	for _, fc := range fcs.Items {
		if consts.PeerGone(fc.Annotations) {
			w.gone[fc.Spec.ClusterID] = true
		}
	}
	return w, nil
}

// selected returns the providers with a virtual node matching the selector.
func (w *world) selected(sel *corev1.NodeSelector) (map[corev1beta1.ClusterID]bool, error) {
	out := map[corev1beta1.ClusterID]bool{}
	var firstErr error
	for i := range w.virtualNodes {
		n := &w.virtualNodes[i]
		id := corev1beta1.ClusterID(n.Labels[consts.RemoteClusterIDLabel])
		if id == "" || n.DeletionTimestamp != nil {
			continue
		}
		ok, err := Matches(sel, n)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if ok {
			out[id] = true
		}
	}
	return out, firstErr
}

// Reconcile brings the NamespaceMaps in line with one NamespaceOffloading, and its status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nsoff := &offv1beta1.NamespaceOffloading{}
	if err := r.Client.Get(ctx, req.NamespacedName, nsoff); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nsoff.Name != consts.NamespaceOffloadingName {
		return reconcile.Result{}, nil // the API refuses other names; nothing to do
	}
	w, err := r.read(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	local := nsoff.Namespace

	if nsoff.DeletionTimestamp != nil {
		if !controllerutil.ContainsFinalizer(nsoff, Finalizer) {
			return reconcile.Result{}, nil
		}
		for id, m := range w.maps {
			if _, ok := m.Spec.DesiredMapping[local]; ok {
				if err := r.setMapping(ctx, m, local, nil); err != nil {
					return reconcile.Result{}, fmt.Errorf("withdrawing namespace %s from %s: %w", local, id, err)
				}
			}
		}
		if err := r.setSchedulingEnabled(ctx, local, false); err != nil {
			return reconcile.Result{}, err
		}
		status := r.status(nsoff, w, nil, "")
		status.OffloadingPhase = offv1beta1.TerminatingOffloadingPhaseType
		if err := r.writeStatus(ctx, nsoff, status); err != nil {
			return reconcile.Result{}, err
		}
		if len(status.RemoteNamespacesConditions) > 0 {
			log.FromContext(ctx).V(1).Info("waiting for the remote namespaces to go", "clusters", len(status.RemoteNamespacesConditions))
			return reconcile.Result{}, nil // the maps' watch brings it back
		}
		return reconcile.Result{}, finalizers.Remove(ctx, r.Client, nsoff, Finalizer, "NamespaceOffloading")
	}
	if err := finalizers.Add(ctx, r.Client, nsoff, Finalizer, "NamespaceOffloading"); err != nil {
		return reconcile.Result{}, err
	}

	if err := r.setSchedulingEnabled(ctx, local, true); err != nil {
		return reconcile.Result{}, err
	}
	selected, selErr := w.selected(nsoff.Spec.ClusterSelector)
	remote := RemoteName(&nsoff.Spec, local, r.LocalClusterID)
	for _, id := range sortedIDs(selected) {
		if w.tenants[id] == "" {
			continue // reported in the status
		}
		m, err := r.ensureMap(ctx, w, id)
		if err != nil {
			return reconcile.Result{}, err
		}
		if m == nil {
			continue // the provider's virtual node is gone: the nodes' watch brings it back
		}
		if m.Spec.DesiredMapping[local] != remote {
			if err := r.setMapping(ctx, m, local, &remote); err != nil {
				return reconcile.Result{}, fmt.Errorf("offloading namespace %s to %s: %w", local, id, err)
			}
		}
	}
	for id, m := range w.maps {
		if _, ok := m.Spec.DesiredMapping[local]; ok && !selected[id] {
			if err := r.setMapping(ctx, m, local, nil); err != nil {
				return reconcile.Result{}, fmt.Errorf("withdrawing namespace %s from %s: %w", local, id, err)
			}
		}
	}
	if selErr != nil {
		log.FromContext(ctx).Info("the cluster selector has an invalid term, which selects nothing: fix spec.clusterSelector", "error", selErr.Error())
	}
	return reconcile.Result{}, r.writeStatus(ctx, nsoff, r.status(nsoff, w, selected, remote))
}

// setSchedulingEnabled sets or removes the label that submits the namespace's new pods to the
// pod-placement webhook (consts.SchedulingEnabledLabel).
func (r *Reconciler) setSchedulingEnabled(ctx context.Context, namespace string, on bool) error {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return client.IgnoreNotFound(err)
	}
	if (ns.Labels[consts.SchedulingEnabledLabel] == "true") == on {
		return nil
	}
	before := ns.DeepCopy()
	if on {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[consts.SchedulingEnabledLabel] = "true"
	} else {
		delete(ns.Labels, consts.SchedulingEnabledLabel)
	}
	if err := r.Client.Patch(ctx, ns, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("labelling namespace %s %s=%t: %w", namespace, consts.SchedulingEnabledLabel, on, err)
	}
	return nil
}

// ensureMap returns the NamespaceMap of a provider, created (named after it) if missing; nil when
// it is missing and the provider has no virtual node any more (providerServes).
func (r *Reconciler) ensureMap(ctx context.Context, w *world, id corev1beta1.ClusterID) (*offv1beta1.NamespaceMap, error) {
	if m, ok := w.maps[id]; ok {
		return m, nil
	}
	if serves, err := r.providerServes(ctx, id); err != nil || !serves {
		return nil, err
	}
	m := &offv1beta1.NamespaceMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.tenants[id], Name: string(id),
		Labels: map[string]string{consts.ReplicationLabel: "true", consts.RemoteClusterIDLabel: string(id)}}}
	err := r.Client.Create(ctx, m)
	switch {
	case apierrors.IsAlreadyExists(err): // created by an earlier reconcile the cache has not seen yet
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return nil, fmt.Errorf("reading NamespaceMap %s/%s: %w", m.Namespace, m.Name, err)
		}
		if m.Labels[consts.RemoteClusterIDLabel] != string(id) || m.Labels[consts.ReplicationLabel] != "true" {
			return nil, fmt.Errorf("NamespaceMap %s/%s exists without labels %s=%s and %s=true: delete it or add the labels",
				m.Namespace, m.Name, consts.RemoteClusterIDLabel, id, consts.ReplicationLabel)
		}
	case err != nil:
		return nil, fmt.Errorf("creating NamespaceMap %s/%s for %s: %w", m.Namespace, m.Name, id, err)
	default:
		log.FromContext(ctx).Info("created NamespaceMap", "provider", id, "map", client.ObjectKeyFromObject(m))
	}
	w.maps[id] = m
	return m, nil
}

// providerServes tells, from the API server rather than the cache, whether provider id still
// has a virtual node that is not being deleted. A NamespaceMap is created only then: an
// unpeering deletes the map once the provider's virtual node is gone, and a reconcile that the
// deletion triggers on a cache still showing the node must not create the map again (the
// unpeering would wait for it forever).
func (r *Reconciler) providerServes(ctx context.Context, id corev1beta1.ClusterID) (bool, error) {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := reader.List(ctx, nodes, client.MatchingLabels{consts.TypeLabel: consts.VirtualNodeType, consts.RemoteClusterIDLabel: string(id)}); err != nil {
		return false, fmt.Errorf("listing the virtual nodes of %s before creating its NamespaceMap: %w", id, err)
	}
	for _, n := range nodes.Items {
		if n.DeletionTimestamp == nil {
			return true, nil
		}
	}
	log.FromContext(ctx).Info("no virtual node of the provider any more (a stale cache selected it): no NamespaceMap", "provider", id)
	return false, nil
}

// setMapping sets (remote non-nil) or removes one key of a map's desiredMapping with a merge
// patch, which touches that key only: reconciles of other namespaces write the same map.
func (r *Reconciler) setMapping(ctx context.Context, m *offv1beta1.NamespaceMap, local string, remote *string) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"desiredMapping": map[string]*string{local: remote}}})
	if err != nil {
		return fmt.Errorf("encoding the patch of NamespaceMap %s/%s: %w", m.Namespace, m.Name, err)
	}
	if err := r.Client.Patch(ctx, m, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("patching spec.desiredMapping[%s] of NamespaceMap %s/%s: %w", local, m.Namespace, m.Name, err)
	}
	return nil
}

// status computes the status of a NamespaceOffloading: one entry per selected cluster, plus
// one per other cluster where the remote namespace still exists (peers gone for good aside).
func (r *Reconciler) status(nsoff *offv1beta1.NamespaceOffloading, w *world, selected map[corev1beta1.ClusterID]bool,
	remote string) offv1beta1.NamespaceOffloadingStatus {
	local := nsoff.Namespace
	out := offv1beta1.NamespaceOffloadingStatus{ObservedGeneration: nsoff.Generation, RemoteNamespaceName: remote,
		RemoteNamespacesConditions: map[string]offv1beta1.RemoteNamespaceConditions{}}
	if remote == "" {
		out.RemoteNamespaceName = nsoff.Status.RemoteNamespaceName
	}
	var ready, failed int
	for id := range selected {
		required := cond(offv1beta1.NamespaceOffloadingRequired, corev1.ConditionTrue, ReasonClusterSelected, conditionMessageSelected)
		var readyCond offv1beta1.RemoteNamespaceCondition
		current, reported := offv1beta1.RemoteNamespaceStatus{}, false
		if m := w.maps[id]; m != nil {
			current, reported = m.Status.CurrentMapping[local]
		}
		switch {
		case w.tenants[id] == "":
			readyCond = cond(offv1beta1.NamespaceReady, corev1.ConditionFalse, ReasonNoTenantNamespace, fmt.Sprintf(conditionMessageNoTenant, id))
		case reported && current.Phase == offv1beta1.MappingAccepted && current.RemoteNamespace == remote:
			readyCond = cond(offv1beta1.NamespaceReady, corev1.ConditionTrue, ReasonNamespaceCreated, fmt.Sprintf(conditionMessageCreated, remote))
			ready++
		case reported && current.Phase == offv1beta1.MappingCreationLoopBackOff && current.RemoteNamespace == remote:
			readyCond = cond(offv1beta1.NamespaceReady, corev1.ConditionFalse, ReasonCreationFailed, fmt.Sprintf(conditionMessageFailed, remote))
			failed++
		case reported && current.Phase == offv1beta1.MappingTerminating:
			readyCond = cond(offv1beta1.NamespaceReady, corev1.ConditionFalse, ReasonInProgress, fmt.Sprintf(conditionMessageRemoving, current.RemoteNamespace))
		default:
			readyCond = cond(offv1beta1.NamespaceReady, corev1.ConditionFalse, ReasonInProgress, fmt.Sprintf(conditionMessageWaiting, remote))
		}
		out.RemoteNamespacesConditions[string(id)] = r.keepTimes(nsoff, id, offv1beta1.RemoteNamespaceConditions{required, readyCond})
	}
	for id, m := range w.maps {
		current, reported := m.Status.CurrentMapping[local]
		if selected[id] || !reported || w.gone[id] {
			continue
		}
		out.RemoteNamespacesConditions[string(id)] = r.keepTimes(nsoff, id, offv1beta1.RemoteNamespaceConditions{
			cond(offv1beta1.NamespaceOffloadingRequired, corev1.ConditionFalse, ReasonClusterNotSelected, conditionMessageOffloaded),
			cond(offv1beta1.NamespaceReady, corev1.ConditionFalse, ReasonTerminating, fmt.Sprintf(conditionMessageRemoving, current.RemoteNamespace)),
		})
	}
	switch n := len(selected); {
	case n == 0:
		out.OffloadingPhase = offv1beta1.NoClusterSelectedOffloadingPhaseType
	case failed == n:
		out.OffloadingPhase = offv1beta1.AllFailedOffloadingPhaseType
	case failed > 0:
		out.OffloadingPhase = offv1beta1.SomeFailedOffloadingPhaseType
	case ready == n:
		out.OffloadingPhase = offv1beta1.ReadyOffloadingPhaseType
	default:
		out.OffloadingPhase = offv1beta1.InProgressOffloadingPhaseType
	}
	if len(out.RemoteNamespacesConditions) == 0 {
		out.RemoteNamespacesConditions = nil
	}
	return out
}

// keepTimes keeps the last transition time of conditions whose status did not change.
func (r *Reconciler) keepTimes(nsoff *offv1beta1.NamespaceOffloading, id corev1beta1.ClusterID, conds offv1beta1.RemoteNamespaceConditions) offv1beta1.RemoteNamespaceConditions {
	for i := range conds {
		for _, old := range nsoff.Status.RemoteNamespacesConditions[string(id)] {
			if old.Type == conds[i].Type && old.Status == conds[i].Status {
				conds[i].LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	return conds
}

func cond(t offv1beta1.RemoteNamespaceConditionType, s corev1.ConditionStatus, reason, msg string) offv1beta1.RemoteNamespaceCondition {
	return offv1beta1.RemoteNamespaceCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
}

// writeStatus patches the status when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, nsoff *offv1beta1.NamespaceOffloading, status offv1beta1.NamespaceOffloadingStatus) error {
	if equality.Semantic.DeepEqual(nsoff.Status, status) {
		return nil
	}
	before := nsoff.DeepCopy()
	nsoff.Status = status
	if err := r.Client.Status().Patch(ctx, nsoff, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("writing the status of NamespaceOffloading %s/%s: %w", nsoff.Namespace, nsoff.Name, err)
	}
	return nil
}

func sortedIDs(set map[corev1beta1.ClusterID]bool) []corev1beta1.ClusterID {
	out := make([]corev1beta1.ClusterID, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// SetupWithManager watches NamespaceOffloadings, and what decides them: virtual nodes (their
// labels), tenant namespaces, the NamespaceMaps (their status) and ForeignClusters (a peer
// declared gone).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	all := enqueue.Listed[*offv1beta1.NamespaceOffloading](mgr.GetClient(),
		func() client.ObjectList { return &offv1beta1.NamespaceOffloadingList{} }, nil, nil)
	ofMap := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		m, ok := o.(*offv1beta1.NamespaceMap)
		if !ok {
			return nil
		}
		seen := map[string]bool{}
		for local := range m.Spec.DesiredMapping {
			seen[local] = true
		}
		for local := range m.Status.CurrentMapping {
			seen[local] = true
		}
		out := make([]reconcile.Request, 0, len(seen))
		for local := range seen {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: local, Name: consts.NamespaceOffloadingName}})
		}
		return out
	})
	labelled := func(key, value string) predicate.Predicate {
		return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[key] == value })
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("namespaceoffloading").
		For(&offv1beta1.NamespaceOffloading{}).
		Watches(&corev1.Node{}, all, builder.OnlyMetadata, builder.WithPredicates(
			labelled(consts.TypeLabel, consts.VirtualNodeType), predicate.LabelChangedPredicate{})).
		Watches(&corev1.Namespace{}, all, builder.OnlyMetadata, builder.WithPredicates(
			labelled(consts.TenantNamespaceLabel, "true"), predicate.LabelChangedPredicate{})).
		Watches(&offv1beta1.NamespaceMap{}, ofMap, builder.WithPredicates(labelled(consts.ReplicationLabel, "true"))).
		Watches(&corev1beta1.ForeignCluster{}, all, builder.WithPredicates(predicate.AnnotationChangedPredicate{})).
		Complete(r); err != nil {
		return fmt.Errorf("building the namespace offloading controller: %w", err)
	}
	return nil
}
