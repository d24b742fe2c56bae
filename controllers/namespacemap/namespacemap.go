// Package namespacemap reconciles, on the provider, the NamespaceMaps that consumers replicate
// into their tenant namespaces. For each desired mapping local -> remote it creates namespace
// remote (labelled offloading.liqo.io/remote-namespace=true and liqo.io/remote-cluster-id=<consumer>
// and with Pod Security's labels at the consumer's level, annotated
// offloading.liqo.io/origin-namespace=<local>), binds the ClusterRole
// liqo-remote-workload there to the consumer's user and liqo-virtual-kubelet-remote to its group
// (as upstream Liqo v1.2 does, for the ResourceSlice certificates), and reports status.currentMapping[local] =
// {remote, Accepted}. A name taken by a namespace that is not the consumer's remote namespace
// for local is reported as CreationLoopBackOff with an Event. Mappings withdrawn from the spec
// have their namespace deleted (Terminating until it is gone, then the entry disappears), and a
// deleted map has all its namespaces deleted before it goes (finalizer).
//
// Pod Security: every remote namespace of a consumer carries pod-security.kubernetes.io/enforce
// (with enforce-version latest, audit and warn) at the consumer's level (podsecurity.Policy:
// its Tenant's liqo.io/pod-security, else the provider's default, baseline unless set otherwise),
// so that the API server itself refuses the pods the level refuses. The labels are kept: a
// changed level (the Tenant's annotation, or the default at the manager's restart) relabels the
// consumer's existing remote namespaces, and labels changed by hand are put back. A consumer
// cannot change them: it may neither write namespaces nor Tenants. A Tenant annotation that is
// not a level is ignored (the default applies) with a Warning Event on the Tenant.
//
// The consumer is the one named by the tenant namespace the map lives in, never by the map's
// own labels, which the consumer writes: a consumer cannot act on another's namespaces.
//
// The consumer is bound in its remote namespaces only while it has a Tenant: a Tenant for its
// cluster ID in the map's tenant namespace, not being deleted. Without one (never created,
// being deleted, or gone), no remote namespace is created, the liqo-binding-liqo-remote-workload
// and liqo-binding-liqo-virtual-kubelet-remote bindings in the consumer's existing remote namespaces are deleted and not re-created, the
// desired mappings are not reported (the consumer sees them as still in progress) and an Event
// says why; the Tenants are watched, so a Tenant that appears (again) brings the mappings back.
// The Tenant's condition does not matter here: a Cordoned tenant keeps its workloads by
// definition, and a Drained one is granted nothing (see the negotiation controller) but needs
// its access to withdraw what it offloaded. Deleting the Tenant is what revokes the access: the
// tenant controller deletes these bindings itself before the Tenant goes (so the revocation
// does not depend on this controller), and this controller does not bring them back.
package namespacemap

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/internal/enqueue"
	"github.com/peerkit/terraform-provider-liqo/controllers/internal/finalizers"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity"
)

const (
	// Finalizer keeps a replicated NamespaceMap until the namespaces it created are gone.
	Finalizer = "offloading.liqo.io/namespace-map"
	// RoleBindingName is the binding of the consumer's user in each of its remote namespaces.
	RoleBindingName = "liqo-binding-liqo-remote-workload"
	// SliceRoleBindingName is the binding of the consumer's group (the organization of its
	// ResourceSlice certificates, as upstream Liqo v1.2 binds it) in each of its remote
	// namespaces.
	SliceRoleBindingName = "liqo-binding-liqo-virtual-kubelet-remote"
	// Event reasons.
	reasonConflict       = "NamespaceConflict"
	reasonCreationFailed = "NamespaceCreationFailed"
	reasonWrongTenant    = "WrongTenantNamespace"
	reasonNoTenant       = "NoTenant"
	reasonBadPodSecurity = "InvalidPodSecurity"
)

// Reconciler reconciles the NamespaceMaps replicated to this (provider) cluster.
type Reconciler struct {
	// Client reads and writes the provider cluster.
	Client client.Client
	// Recorder records why a remote namespace cannot be created, as Events on the NamespaceMap.
	Recorder events.EventRecorder
	// PodSecurity decides the Pod Security level of each consumer's remote namespaces.
	PodSecurity podsecurity.Policy
}

// isCopy tells whether a NamespaceMap is a consumer's replicated one (not a local original).
func isCopy(o client.Object) bool {
	return o.GetLabels()[consts.ReplicationOriginLabel] != "" && o.GetLabels()[consts.ReplicationLabel] != "true"
}

// Reconcile brings the namespaces of one replicated NamespaceMap in line, and its status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nm := &offv1beta1.NamespaceMap{}
	if err := r.Client.Get(ctx, req.NamespacedName, nm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !isCopy(nm) {
		return reconcile.Result{}, nil
	}
	consumer, err := r.consumerOf(ctx, nm)
	if err != nil || consumer == "" {
		return reconcile.Result{}, err
	}
	deleting := nm.DeletionTimestamp != nil
	if deleting && !controllerutil.ContainsFinalizer(nm, Finalizer) {
		return reconcile.Result{}, nil
	}
	if !deleting {
		if err := finalizers.Add(ctx, r.Client, nm, Finalizer, "NamespaceMap"); err != nil {
			return reconcile.Result{}, err
		}
	}

	ours := &corev1.NamespaceList{}
	if err := r.Client.List(ctx, ours, client.MatchingLabels{consts.RemoteNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the remote namespaces of %s: %w", consumer, err)
	}
	desired := nm.Spec.DesiredMapping
	if deleting {
		desired = nil
	}
	current := map[string]offv1beta1.RemoteNamespaceStatus{}
	// Withdrawn or renamed mappings: their namespace goes.
	for i := range ours.Items {
		ns := &ours.Items[i]
		local := ns.Annotations[consts.OriginNamespaceAnnotation]
		if want, ok := desired[local]; ok && want == ns.Name {
			continue
		}
		if ns.DeletionTimestamp == nil {
			if err := r.Client.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting namespace %s, withdrawn by %s: %w", ns.Name, consumer, err)
			}
			log.FromContext(ctx).Info("deleting remote namespace", "namespace", ns.Name, "consumer", consumer, "origin", local)
		}
		if local != "" {
			current[local] = offv1beta1.RemoteNamespaceStatus{RemoteNamespace: ns.Name, Phase: offv1beta1.MappingTerminating}
		}
	}
	var level podsecurity.Decision
	if !deleting {
		tenant, err := r.tenant(ctx, nm.Namespace, consumer)
		if err != nil {
			return reconcile.Result{}, err
		}
		if tenant == nil {
			return reconcile.Result{}, r.unbind(ctx, nm, consumer, ours.Items, current)
		}
		if level = r.PodSecurity.ForTenant(consumer, tenant); level.Ignored != "" {
			r.Recorder.Eventf(tenant, nil, corev1.EventTypeWarning, reasonBadPodSecurity, "LabelNamespaces", "%s", level.Ignored)
		}
	}
	if deleting {
		if err := r.writeStatus(ctx, nm, current); err != nil {
			return reconcile.Result{}, err
		}
		if len(ours.Items) > 0 {
			return reconcile.Result{}, nil // the namespaces' watch brings it back
		}
		return reconcile.Result{}, finalizers.Remove(ctx, r.Client, nm, Finalizer, "NamespaceMap")
	}

	locals := make([]string, 0, len(desired))
	for local := range desired {
		locals = append(locals, local)
	}
	sort.Strings(locals)
	for _, local := range locals {
		if _, busy := current[local]; busy {
			continue // its previous namespace is still going: the new one comes after
		}
		status, err := r.ensureNamespace(ctx, nm, level, local, desired[local])
		if err != nil {
			return reconcile.Result{}, err
		}
		current[local] = status
	}
	return reconcile.Result{}, r.writeStatus(ctx, nm, current)
}

// tenant returns the consumer's Tenant in its tenant namespace that is not being deleted
// (nil when it has none): what its remote namespaces and bindings depend on.
func (r *Reconciler) tenant(ctx context.Context, namespace, consumer string) (*authv1beta1.Tenant, error) {
	tenants := &authv1beta1.TenantList{}
	if err := r.Client.List(ctx, tenants, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the Tenants in %s: %w", namespace, err)
	}
	for i := range tenants.Items {
		if t := &tenants.Items[i]; string(t.Spec.ClusterID) == consumer && t.DeletionTimestamp == nil {
			return t, nil
		}
	}
	return nil, nil
}

// unbind is the reconcile of a map whose consumer has no Tenant: the consumer's workload
// bindings in its remote namespaces go, nothing is created, and only the namespaces being
// withdrawn (current) are reported.
func (r *Reconciler) unbind(ctx context.Context, nm *offv1beta1.NamespaceMap, consumer string, ours []corev1.Namespace,
	current map[string]offv1beta1.RemoteNamespaceStatus) error {
	for i := range ours {
		ns := ours[i].Name
		for _, b := range workloadBindings(consumer) {
			rb := &rbacv1.RoleBinding{}
			err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.name}, rb)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("reading RoleBinding %s/%s: %w", ns, b.name, err)
			}
			if err := r.Client.Delete(ctx, rb); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("unbinding %s, which has no Tenant, in namespace %s: %w", consumer, ns, err)
			}
			log.FromContext(ctx).Info("unbound the consumer in its remote namespace: it has no Tenant", "namespace", ns, "consumer", consumer, "binding", b.name)
		}
	}
	if len(nm.Spec.DesiredMapping) > 0 {
		r.Recorder.Eventf(nm, nil, corev1.EventTypeWarning, reasonNoTenant, "Bind",
			"cluster %s has no Tenant in %s (or it is being deleted): its remote namespaces are neither created nor bound until it has one",
			consumer, nm.Namespace)
	}
	return r.writeStatus(ctx, nm, current)
}

// consumerOf is the consumer a map belongs to: the cluster of its tenant namespace. "" (with
// an Event) when the map is not in a tenant namespace or claims another cluster.
func (r *Reconciler) consumerOf(ctx context.Context, nm *offv1beta1.NamespaceMap) (string, error) {
	tenant := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: nm.Namespace}, tenant); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil // the map goes with its namespace
		}
		return "", fmt.Errorf("reading the namespace of NamespaceMap %s/%s: %w", nm.Namespace, nm.Name, err)
	}
	consumer := tenant.Labels[consts.RemoteClusterIDLabel]
	if tenant.Labels[consts.TenantNamespaceLabel] != "true" || consumer == "" || nm.Labels[consts.RemoteClusterIDLabel] != consumer {
		r.Recorder.Eventf(nm, nil, corev1.EventTypeWarning, reasonWrongTenant, "Verify",
			"namespace %s is not the tenant namespace of cluster %q (labels %s=true, %s=<cluster>): the map is ignored; replicate it into the consumer's own tenant namespace",
			nm.Namespace, nm.Labels[consts.RemoteClusterIDLabel], consts.TenantNamespaceLabel, consts.RemoteClusterIDLabel)
		log.FromContext(ctx).Info("NamespaceMap not in its consumer's tenant namespace: ignored", "map", client.ObjectKeyFromObject(nm))
		return "", nil
	}
	return consumer, nil
}

// ensureNamespace creates (or confirms) the consumer's namespace remote for local, with the
// consumer's binding and Pod Security labels at its level, and returns its state.
func (r *Reconciler) ensureNamespace(ctx context.Context, nm *offv1beta1.NamespaceMap, level podsecurity.Decision,
	local, remote string) (offv1beta1.RemoteNamespaceStatus, error) {
	consumer := level.Consumer
	state := func(p offv1beta1.MappingPhase) offv1beta1.RemoteNamespaceStatus {
		return offv1beta1.RemoteNamespaceStatus{RemoteNamespace: remote, Phase: p}
	}
	if errs := validation.IsDNS1123Label(remote); len(errs) > 0 {
		r.Recorder.Eventf(nm, nil, corev1.EventTypeWarning, reasonCreationFailed, "CreateNamespace",
			"cannot create namespace %q for namespace %s of cluster %s: %s; choose another remote name on the consumer",
			remote, local, consumer, strings.Join(errs, "; "))
		return state(offv1beta1.MappingCreationLoopBackOff), nil
	}
	ns := &corev1.Namespace{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: remote}, ns)
	switch {
	case apierrors.IsNotFound(err):
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: remote,
			Labels:      map[string]string{consts.RemoteNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer},
			Annotations: map[string]string{consts.OriginNamespaceAnnotation: local}}}
		podsecurity.SetLabels(ns, level.Level)
		if err := r.Client.Create(ctx, ns); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return offv1beta1.RemoteNamespaceStatus{}, fmt.Errorf("creating namespace %s for %s: %w", remote, consumer, err) // retried: who owns it?
			}
			r.Recorder.Eventf(nm, nil, corev1.EventTypeWarning, reasonCreationFailed, "CreateNamespace",
				"cannot create namespace %s for namespace %s of cluster %s: %v; choose another remote name on the consumer", remote, local, consumer, err)
			return state(offv1beta1.MappingCreationLoopBackOff), nil
		}
		log.FromContext(ctx).Info("created remote namespace", "namespace", remote, "consumer", consumer, "origin", local)
	case err != nil:
		return offv1beta1.RemoteNamespaceStatus{}, fmt.Errorf("reading namespace %s for %s: %w", remote, consumer, err)
	case ns.Labels[consts.RemoteNamespaceLabel] != "true" || ns.Labels[consts.RemoteClusterIDLabel] != consumer ||
		ns.Annotations[consts.OriginNamespaceAnnotation] != local:
		r.Recorder.Eventf(nm, nil, corev1.EventTypeWarning, reasonConflict, "CreateNamespace",
			"namespace %s already exists on this cluster and is not the remote namespace of %s for its namespace %s: "+
				"delete or rename namespace %s on this cluster, or offload %s under another name "+
				"(NamespaceOffloading namespaceMappingStrategy DefaultName, or SelectedName with another remoteNamespaceName)",
			remote, consumer, local, remote, local)
		return state(offv1beta1.MappingCreationLoopBackOff), nil
	case ns.DeletionTimestamp != nil:
		return state(offv1beta1.MappingTerminating), nil // recreated once gone
	default:
		before := ns.DeepCopy()
		if podsecurity.SetLabels(ns, level.Level) {
			if err := r.Client.Patch(ctx, ns, client.MergeFrom(before)); err != nil {
				return offv1beta1.RemoteNamespaceStatus{}, fmt.Errorf("setting Pod Security level %s (%s) on remote namespace %s of %s: %w",
					level.Level, level.Source, remote, consumer, err)
			}
			log.FromContext(ctx).Info("Pod Security level of remote namespace set", "namespace", remote, "consumer", consumer,
				"level", level.Level, "from", level.Source)
		}
	}
	if err := r.ensureBinding(ctx, remote, consumer); err != nil {
		return offv1beta1.RemoteNamespaceStatus{}, err
	}
	return state(offv1beta1.MappingAccepted), nil
}

// workloadBinding is one of the bindings of a consumer in each of its remote namespaces.
type workloadBinding struct {
	name     string
	roleRef  rbacv1.RoleRef
	subjects []rbacv1.Subject
}

// workloadBindings are a consumer's bindings in each of its remote namespaces: its user (the
// control-plane certificate's name, which a virtual kubelet uses while its slice is not signed,
// and those of our versions before slice identities used always) to liqo-remote-workload, and
// its group (the organization of its ResourceSlice certificates, which virtual kubelets use
// once their slice is signed: upstream's and ours) to liqo-virtual-kubelet-remote.
func workloadBindings(consumer string) []workloadBinding {
	role := func(name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	}
	return []workloadBinding{
		{RoleBindingName, role(clusteridentity.RemoteWorkloadClusterRole), []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: consumer}}},
		{SliceRoleBindingName, role(clusteridentity.SliceWorkloadClusterRole), []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: consumer}}},
	}
}

// IsWorkloadBinding says whether a RoleBinding of that name in a remote namespace is one of its
// consumer's bindings (which the tenant controller revokes with the Tenant).
func IsWorkloadBinding(name string) bool {
	return name == RoleBindingName || name == SliceRoleBindingName
}

// ensureBinding binds the consumer in a remote namespace (workloadBindings), and nobody else;
// the bindings are labelled with the consumer's cluster ID.
func (r *Reconciler) ensureBinding(ctx context.Context, namespace, consumer string) error {
	for _, b := range workloadBindings(consumer) {
		if err := r.ensureOneBinding(ctx, namespace, consumer, b); err != nil {
			return err
		}
	}
	return nil
}

// ensureOneBinding makes or restores one of the consumer's bindings in a remote namespace.
func (r *Reconciler) ensureOneBinding(ctx context.Context, namespace, consumer string, b workloadBinding) error {
	rb := &rbacv1.RoleBinding{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: b.name}, rb)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading RoleBinding %s/%s: %w", namespace, b.name, err)
	case rb.RoleRef != b.roleRef: // immutable: replaced
		if err := r.Client.Delete(ctx, rb); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("replacing RoleBinding %s/%s, bound to %s: %w", namespace, b.name, rb.RoleRef.Name, err)
		}
	case !equality.Semantic.DeepEqual(rb.Subjects, b.subjects) || rb.Labels[consts.RemoteClusterIDLabel] != consumer:
		rb.Subjects = b.subjects
		if rb.Labels == nil {
			rb.Labels = map[string]string{}
		}
		rb.Labels[consts.RemoteClusterIDLabel] = consumer // what the tenant controller revokes by
		if err := r.Client.Update(ctx, rb); err != nil {
			return fmt.Errorf("restoring the subjects and labels of RoleBinding %s/%s: %w", namespace, b.name, err)
		}
		return nil
	default:
		return nil
	}
	rb = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: b.name,
		Labels: map[string]string{consts.RemoteClusterIDLabel: consumer}}, RoleRef: b.roleRef, Subjects: b.subjects}
	if err := r.Client.Create(ctx, rb); err != nil {
		return fmt.Errorf("binding %s to ClusterRole %s in namespace %s (the controller manager needs the bind verb on that ClusterRole): %w",
			consumer, b.roleRef.Name, namespace, err)
	}
	return nil
}

// writeStatus patches status.currentMapping when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, nm *offv1beta1.NamespaceMap, current map[string]offv1beta1.RemoteNamespaceStatus) error {
	if len(current) == 0 {
		current = nil
	}
	if equality.Semantic.DeepEqual(nm.Status.CurrentMapping, current) {
		return nil
	}
	before := nm.DeepCopy()
	nm.Status.CurrentMapping = current
	if err := r.Client.Status().Patch(ctx, nm, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("writing the status of NamespaceMap %s/%s: %w", nm.Namespace, nm.Name, err)
	}
	return nil
}

// SetupWithManager watches replicated NamespaceMaps, namespaces (the consumers' remote ones,
// and any namespace a map asks for, so a conflict clears when the namespace goes), the
// bindings in remote namespaces and the Tenants (the maps of their tenant namespace).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	mapsFor := func(ctx context.Context, consumer, name string) []reconcile.Request {
		maps := &offv1beta1.NamespaceMapList{}
		if err := mgr.GetClient().List(ctx, maps, client.HasLabels{consts.ReplicationOriginLabel}); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range maps.Items {
			m := &maps.Items[i]
			hit := consumer != "" && m.Labels[consts.RemoteClusterIDLabel] == consumer
			for _, remote := range m.Spec.DesiredMapping {
				hit = hit || remote == name
			}
			if hit {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)})
			}
		}
		return out
	}
	ofNamespace := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		consumer := ""
		if o.GetLabels()[consts.RemoteNamespaceLabel] == "true" {
			consumer = o.GetLabels()[consts.RemoteClusterIDLabel]
		}
		return mapsFor(ctx, consumer, o.GetName())
	})
	ofBinding := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return mapsFor(ctx, "", o.GetNamespace())
	})
	ofTenant := enqueue.Listed[*offv1beta1.NamespaceMap](mgr.GetClient(),
		func() client.ObjectList { return &offv1beta1.NamespaceMapList{} },
		enqueue.InNamespaceOf(client.HasLabels{consts.ReplicationOriginLabel}), nil)
	if err := ctrl.NewControllerManagedBy(mgr).Named("namespacemap").
		For(&offv1beta1.NamespaceMap{}, builder.WithPredicates(predicate.NewPredicateFuncs(isCopy))).
		Watches(&corev1.Namespace{}, ofNamespace).
		Watches(&rbacv1.RoleBinding{}, ofBinding, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return IsWorkloadBinding(o.GetName())
		}))).
		Watches(&authv1beta1.Tenant{}, ofTenant).
		Complete(r); err != nil {
		return fmt.Errorf("building the NamespaceMap controller: %w", err)
	}
	return nil
}
