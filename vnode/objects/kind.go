package objects

import (
	"context"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/reflection"
)

// handler is a kind as the run sees it, whatever its Go type.
type handler interface {
	// resource is the kind's plural resource name.
	resource() string
	// newInformer watches the kind's local objects in one namespace of the consumer; tweak filters.
	newInformer(cs kubernetes.Interface, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer
	// newRemoteInformer watches the kind's copies in one namespace of the provider; tweak filters.
	newRemoteInformer(rn *run, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer
	// offloading says whether the kind's copies are of our offloading.liqo.io API (run.offloading).
	offloading() bool
	// localFilter narrows the local informer (nil: every object).
	localFilter(*metav1.ListOptions)
	// localName returns the local name a remote copy stands for ("" if none).
	localName(remote string) string
	// related names another resource whose changes concern objects of this kind, and says which.
	related() (string, func(ns *reflection.Namespace, obj any) []string)
	// reconcile makes the remote copy of the local object name match it.
	reconcile(ctx context.Context, rn *run, ns *reflection.Namespace, name string) error
	// ledgerName is, for a kind reflected write-only, the ConfigMap recording its copies in each
	// remote namespace; "" for a kind whose copies are watched.
	ledgerName() string
}

// object is what every reflected kind is: a pointer to an API type.
type object interface {
	metav1.Object
	runtime.Object
}

// api is the part of a typed client the reflection uses (ConfigMapInterface and friends).
type api[T object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// kind says how one kind of object (L) is reflected as copies of type R on the provider: most
// kinds are copied as themselves (sameKind); EndpointSlices become ShadowEndpointSlices, a
// custom resource of offloading.liqo.io. The rest is common.
type kind[L, R object] struct {
	// plural is the local resource name; remotePlural the copies' when they are of another
	// kind.
	plural, remotePlural string
	// informer builds the kind's informer (client-go's NewFiltered*Informer), which watches the
	// copies too when they are of the same type.
	informer func(cs kubernetes.Interface, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer
	// client is the copies' typed client in a namespace of the provider.
	client func(cs kubernetes.Interface, ns string) api[R]
	// remoteInformer and remoteClient, when set, replace informer and client on the provider,
	// for copies of our offloading.liqo.io API; they get the provider's REST client of it.
	remoteInformer func(rc rest.Interface, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer
	remoteClient   func(rc rest.Interface, ns string) api[R]
	// filter narrows the local informer, e.g. by field selector. Optional.
	filter func(*metav1.ListOptions)
	// toRemote and toLocal rename objects between the clusters ("" = not reflected). Optional:
	// names stay the same by default.
	toRemote, toLocal func(string) string
	// policy says which local objects are reflected ("": the kind has none of its own, e.g.
	// EndpointSlices follow their Service); exempt, optional, names objects reflected whatever
	// the policy but for an explicit opt-out (the root CA ConfigMap, which offloaded pods need).
	policy Policy
	exempt func(obj L) bool
	// skip says why a local object is not reflected ("" = reflect it). Optional.
	skip func(ns *reflection.Namespace, obj L) string
	// forge returns the remote copy's content (without metadata) for a local object.
	forge func(env *vnode.Env, ns *reflection.Namespace, local L) R
	// labelOverrides replace local labels on the copy (e.g. an EndpointSlice's managed-by).
	labelOverrides map[string]string
	// dropAnnotations are local annotations the copy does not get. Optional.
	dropAnnotations []string
	// content copies desired's content onto next (a copy of the current remote object), keeping
	// what the provider allocated itself, and says whether next changed.
	content func(next, desired R) bool
	// dependsOn names a resource whose local changes concern objects of this kind, and dependents
	// which of them. Optional.
	dependsOn  string
	dependents func(ns *reflection.Namespace, obj any) []string
	// ledger, when set, reflects the kind write-only (writeonly.go): copies are never read,
	// their names are recorded in the ConfigMap of that name in the remote namespace.
	ledger string
}

// sameKind is a kind whose copies are of its own type.
type sameKind[T object] = kind[T, T]

func (k *kind[L, R]) resource() string { return k.plural }

func (k *kind[L, R]) ledgerName() string { return k.ledger }

// copies is the resource name of the copies, for logs and errors.
func (k *kind[L, R]) copies() string {
	if k.remotePlural != "" {
		return k.remotePlural
	}
	return k.plural
}

func (k *kind[L, R]) offloading() bool { return k.remoteInformer != nil }

func (k *kind[L, R]) newInformer(cs kubernetes.Interface, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
	return k.informer(cs, ns, tweak)
}

func (k *kind[L, R]) newRemoteInformer(rn *run, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
	if k.remoteInformer != nil {
		return k.remoteInformer(rn.offloading, ns, tweak)
	}
	return k.informer(rn.env.Remote, ns, tweak)
}

// remoteAPI is the copies' client in the provider's namespace ns.
func (k *kind[L, R]) remoteAPI(rn *run, ns string) api[R] {
	if k.remoteClient != nil {
		return k.remoteClient(rn.offloading, ns)
	}
	return k.client(rn.env.Remote, ns)
}

func (k *kind[L, R]) localFilter(o *metav1.ListOptions) {
	if k.filter != nil {
		k.filter(o)
	}
}

func (k *kind[L, R]) remoteName(local string) string {
	if k.toRemote == nil {
		return local
	}
	return k.toRemote(local)
}

func (k *kind[L, R]) localName(remote string) string {
	if k.toLocal == nil {
		return remote
	}
	return k.toLocal(remote)
}

func (k *kind[L, R]) related() (string, func(*reflection.Namespace, any) []string) {
	return k.dependsOn, k.dependents
}

// reflected says whether an object on the provider is a copy made by this consumer.
func reflected(o metav1.Object, env *vnode.Env) bool {
	l := o.GetLabels()
	return l[consts.ReflectedLabel] == "true" && l[consts.OriginClusterIDLabel] == string(env.ConsumerID)
}

// skipReason says why a local object is not reflected, or "".
func (k *kind[L, R]) skipReason(ns *reflection.Namespace, obj L) string {
	if optedOut(obj) {
		return "opted out with " + consts.SkipReflectionAnnotation
	}
	if obj.GetLabels()[consts.ReflectedLabel] == "true" {
		return "it is itself a reflected copy"
	}
	if k.policy != "" && (k.exempt == nil || !k.exempt(obj)) {
		if why := k.policy.reason(obj); why != "" {
			return why
		}
	}
	if k.skip != nil {
		return k.skip(ns, obj)
	}
	return ""
}

// desired returns the remote copy of a local object.
func (k *kind[L, R]) desired(env *vnode.Env, ns *reflection.Namespace, local L, remoteName string) R {
	out := k.forge(env, ns, local)
	out.SetName(remoteName)
	out.SetNamespace(ns.Remote)
	lbl := make(map[string]string, len(local.GetLabels())+4)
	maps.Copy(lbl, local.GetLabels())
	maps.Copy(lbl, k.labelOverrides)
	maps.Copy(lbl, consts.ReflectionLabels(string(env.ConsumerID), string(env.ProviderID)))
	out.SetLabels(lbl)
	ann := make(map[string]string, len(local.GetAnnotations())+1)
	maps.Copy(ann, local.GetAnnotations())
	for _, key := range k.dropAnnotations {
		delete(ann, key)
	}
	ann[consts.OriginNamespaceAnnotation] = ns.Local
	out.SetAnnotations(ann)
	return out
}

// reconcile makes the remote copy of the local object name match it: created, updated, or
// deleted when the local object is gone or not to be reflected.
func (k *kind[L, R]) reconcile(ctx context.Context, rn *run, ns *reflection.Namespace, name string) error {
	if k.ledger != "" {
		return k.reconcileWriteOnly(ctx, rn, ns, name)
	}
	remoteName := k.remoteName(name)
	if remoteName == "" {
		return nil
	}
	local, hasLocal := reflection.Cached[L](ns.LocalInf[k.plural], ns.Local, name)
	remote, hasRemote := reflection.Cached[R](ns.RemoteInf[k.plural], ns.Remote, remoteName)
	if hasRemote && !reflected(remote, rn.env) {
		return nil // the selector keeps these out; never touch one anyway
	}
	reason := "deleted locally"
	if hasLocal {
		reason = k.skipReason(ns, local)
	}
	cl := k.remoteAPI(rn, ns.Remote)
	if reason != "" {
		if !hasRemote {
			return nil
		}
		return k.delete(ctx, rn, cl, remote, reason)
	}
	want := k.desired(rn.env, ns, local, remoteName)
	if !hasRemote {
		_, err := cl.Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			rn.log.V(1).Info("reflected", "resource", k.plural, "namespace", ns.Local, "name", name)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return errorf(err, "creating %s %s/%s on the provider", k.copies(), ns.Remote, remoteName)
		}
		// Not in the cache yet, or not ours.
		cur, err := cl.Get(ctx, remoteName, metav1.GetOptions{})
		if err != nil {
			return errorf(err, "reading %s %s/%s on the provider", k.copies(), ns.Remote, remoteName)
		}
		if !reflected(cur, rn.env) {
			rn.log.Info("not reflected: the provider has an object of that name that is not a copy from this cluster; rename one of them",
				"resource", k.plural, "namespace", ns.Local, "name", name, "remoteNamespace", ns.Remote, "remoteName", remoteName)
			return nil
		}
		remote = cur
	}
	return k.update(ctx, rn, cl, remote, want)
}

// update brings the remote copy current to want; if the provider refuses because a field
// that cannot change did (a Secret's type, an immutable ConfigMap's data, a Service's cluster
// IP mode), it replaces the copy.
func (k *kind[L, R]) update(ctx context.Context, rn *run, cl api[R], current, want R) error {
	next, ok := current.DeepCopyObject().(R)
	if !ok {
		return nil
	}
	changed := k.content(next, want)
	if !maps.Equal(next.GetLabels(), want.GetLabels()) {
		next.SetLabels(want.GetLabels())
		changed = true
	}
	if !maps.Equal(next.GetAnnotations(), want.GetAnnotations()) {
		next.SetAnnotations(want.GetAnnotations())
		changed = true
	}
	if !changed {
		return nil
	}
	_, err := cl.Update(ctx, next, metav1.UpdateOptions{})
	switch {
	case err == nil:
		rn.log.V(1).Info("updated reflection", "resource", k.copies(), "remoteNamespace", current.GetNamespace(), "name", current.GetName())
		return nil
	case apierrors.IsInvalid(err):
		if err := k.delete(ctx, rn, cl, current, "a field that cannot change did: replacing it"); err != nil {
			return err
		}
		if _, err := cl.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return errorf(err, "creating %s %s/%s on the provider again", k.copies(), want.GetNamespace(), want.GetName())
		}
		return nil
	default:
		return errorf(err, "updating %s %s/%s on the provider", k.copies(), current.GetNamespace(), current.GetName())
	}
}

// delete removes a remote copy, if it is still the one we saw.
func (k *kind[L, R]) delete(ctx context.Context, rn *run, cl api[R], remote R, reason string) error {
	uid := remote.GetUID()
	err := cl.Delete(ctx, remote.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return errorf(err, "deleting %s %s/%s on the provider (%s)", k.copies(), remote.GetNamespace(), remote.GetName(), reason)
	}
	rn.log.V(1).Info("deleted reflection", "resource", k.copies(), "remoteNamespace", remote.GetNamespace(), "name", remote.GetName(), "reason", reason)
	return nil
}
