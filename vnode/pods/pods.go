// Package pods is the virtual kubelet's pod reflector: the pods the consumer's scheduler binds
// to a virtual node run on the provider, through ShadowPods, and their status comes back.
//
// For every local pod with spec.nodeName = the virtual node, in a namespace offloaded to the
// provider (env.Namespaces), the reflector keeps a ShadowPod of the same name in the mapped
// remote namespace; the provider's shadowpod controller makes a Pod of it and keeps that Pod
// alive. In detail:
//
//   - Spec: the local spec without what placed the pod on the virtual node (nodeName,
//     nodeSelector, affinity, topology spread, the virtual-node toleration, scheduler name,
//     priority, scheduling and readiness gates); references keep their names (ConfigMaps and
//     Secrets are reflected under the same names) except kube-root-ca.crt, which is
//     liqo-kube-root-ca.crt on the provider. Service-account tokens: see remoteSpec; the
//     service account of the same name is created in the remote namespace when missing.
//   - Offloading patch: the VirtualNode's spec.offloadingPatch (Env.OffloadingPatch), as
//     upstream's virtual kubelet applies it: its nodeSelector, tolerations, node affinity and
//     runtimeClassName go into the spec of the ShadowPods it creates (see patchSpec); the keys of
//     labelsNotReflected and annotationsNotReflected are left out of their labels and annotations.
//   - Refused: a pod asking for the host's network, PID or IPC namespaces is not offloaded: it
//     turns Failed (reason OffloadingRefused) with a Warning Event saying why.
//   - Labels, annotations, container images and activeDeadlineSeconds: the local pod's are
//     copied to the ShadowPod (and from there to the remote pod) when they change; the
//     ShadowPod also carries liqo.io/origin-cluster-id=<consumer>,
//     offloading.liqo.io/nodename=<virtual node> and offloading.liqo.io/reflected=true.
//   - Status: the remote pod's phase, conditions, container statuses (restart counts), pod IPs
//     and start time are written to the local pod's status. While the provider re-creates a
//     deleted remote pod, the local pod is not Ready.
//   - Deletion: a local pod being deleted has its ShadowPod deleted; once the remote pod is
//     gone too, the reflector, as the pod's kubelet, removes the local pod (grace period 0). A
//     ShadowPod without a local pod is deleted. A ShadowPod deleted on the provider after its
//     pod had started (the local pod has a start time) is gone for good: the local pod turns
//     Failed (reason ProviderPodDeleted), which its controller replaces; before that, the
//     ShadowPod is created again.
//   - Namespace released: when a namespace stops being offloaded (unoffloaded by the consumer,
//     or released by the provider) while the reflector runs, its started pods bound to the node
//     turn Failed (reason NamespaceNotOffloaded) at once, which their controllers replace: the
//     remote pods are gone with the remote namespace. Pods that never started stay Pending, as
//     in a namespace never offloaded (failing them would only make their controllers churn).
//   - Provider unreachable: nothing local is deleted or failed (the informers keep the last
//     state and failed writes are retried with back-off, 10s at most); once the provider
//     answers again, the informers re-list and every difference is reconciled.
//
// Watches, no polling: one informer for the local pods bound to the node, and per remote
// namespace one informer for the node's ShadowPods and one for their pods (label selector on
// the reflection labels), started and stopped as namespaces are offloaded or released
// (Namespaces.Subscribe). Managed fields are stripped from cached objects. A work queue keyed
// by local namespace/name is drained by Workers goroutines.
package pods

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/namespaces"
)

// Reasons of the local pod's status and Events.
const (
	// ReasonRefused: the pod asks for something an offloaded pod cannot have.
	ReasonRefused = "OffloadingRefused"
	// ReasonRemoteDeleted: the pod's ShadowPod was deleted on the provider after it had started.
	ReasonRemoteDeleted = "ProviderPodDeleted"
	// ReasonNamespaceReleased: the pod's namespace stopped being offloaded (unoffloaded, or the
	// provider released it): the pod can run neither there nor, bound to the virtual node, here.
	ReasonNamespaceReleased = "NamespaceNotOffloaded"
	// ReasonRemoteRecreating: the provider re-creates the remote pod.
	ReasonRemoteRecreating = "ProviderPodRecreating"
)

// Reflector offloads the pods of one virtual node. The zero value uses the defaults.
type Reflector struct {
	// Workers reconcile pods in parallel. Default 64 (they mostly wait for API servers).
	Workers int
	// QPS and Burst limit the requests to each cluster. Default 200 and 400.
	QPS   float32
	Burst int
}

// Name names the reflector in logs.
func (r *Reflector) Name() string { return "pods" }

// Run reflects the node's pods until ctx ends.
func (r *Reflector) Run(ctx context.Context, env *vnode.Env) error {
	rf, err := r.start(ctx, env)
	if err != nil {
		return err
	}
	rf.wait()
	return nil
}

// reflection is one running reflector.
type reflection struct {
	env      *vnode.Env
	log      logr.Logger
	local    kubernetes.Interface
	remote   kubernetes.Interface
	shadows  rest.Interface // the provider's offloading.liqo.io/v1beta1
	labels   map[string]string
	selector string
	recorder record.EventRecorder
	addrs    addresses
	queue    workqueue.TypedRateLimitingInterface[string]
	pods     corelisters.PodLister
	podIndex cache.Indexer
	// providerUp follows the virtual node's Ready condition (the provider's API server answers):
	// while it is false, statuses are not written from what the remote watches last saw.
	providerUp atomic.Bool

	mu      sync.Mutex
	ctx     context.Context             // the reflector's life
	remotes map[string]*remoteNamespace // by local namespace
	// released are the local namespaces whose offloading ended while this reflector ran: their
	// pods bound to the node can run nowhere and are failed.
	released map[string]bool
	sas      sync.Map   // remote namespace/name of service accounts known to exist
	saMu     sync.Mutex // serialises their creation
	done     chan struct{}
}

// remoteNamespace watches the node's ShadowPods and their pods in one remote namespace.
type remoteNamespace struct {
	local, remote   string
	ctx             context.Context // ends when the namespace's watches stop
	cancel          context.CancelFunc
	shadows, pods   cache.SharedIndexInformer
	shadowsSynced   cache.InformerSynced
	remotePodSynced cache.InformerSynced
}

func (n *remoteNamespace) synced() bool { return n.shadowsSynced() && n.remotePodSynced() }

func (r *Reflector) start(ctx context.Context, env *vnode.Env) (*reflection, error) {
	workers, qps, burst := r.Workers, r.QPS, r.Burst
	if workers <= 0 {
		workers = 64
	}
	if qps <= 0 {
		qps = 200
	}
	if burst <= 0 {
		burst = 400
	}
	tune := func(c *rest.Config) *rest.Config {
		c = rest.CopyConfig(c)
		c.QPS, c.Burst = qps, burst
		return c
	}
	// Built-in kinds travel as protobuf: cheaper to encode and decode on both ends than JSON.
	protobuf := func(c *rest.Config) *rest.Config {
		c.ContentType = runtime.ContentTypeProtobuf
		c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		return c
	}
	if env.LocalConfig == nil || env.RemoteConfig == nil {
		return nil, errors.New("pod reflector: the environment has no LocalConfig or RemoteConfig")
	}
	local, err := kubernetes.NewForConfig(protobuf(tune(env.LocalConfig)))
	if err != nil {
		return nil, fmt.Errorf("pod reflector: client of the consumer cluster: %w", err)
	}
	remote, err := kubernetes.NewForConfig(protobuf(tune(env.RemoteConfig)))
	if err != nil {
		return nil, fmt.Errorf("pod reflector: client of provider %s: %w", env.ProviderID, err)
	}
	scheme, err := api.NewScheme()
	if err != nil {
		return nil, fmt.Errorf("pod reflector: %w", err)
	}
	shadows, err := restClient(tune(env.RemoteConfig), scheme, offv1beta1.GroupVersion)
	if err != nil {
		return nil, fmt.Errorf("pod reflector: ShadowPod client of provider %s: %w", env.ProviderID, err)
	}
	lbls := reflectionLabels(string(env.ConsumerID), env.NodeName)
	rf := &reflection{
		env: env, log: env.Log.WithValues("reflector", "pods"), local: local, remote: remote, shadows: shadows,
		labels: lbls, selector: labels.SelectorFromSet(lbls).String(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pods-" + env.NodeName}),
		remotes:  map[string]*remoteNamespace{},
		released: map[string]bool{},
		ctx:      ctx,
		done:     make(chan struct{}),
	}

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: local.CoreV1().Events("")})
	rf.recorder = broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "liqo-virtual-kubelet", Host: env.NodeName})

	factory := informers.NewSharedInformerFactoryWithOptions(local, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", env.NodeName).String()
		}),
		informers.WithTransform(stripManagedFields))
	podInformer := factory.Core().V1().Pods()
	rf.pods, rf.podIndex = podInformer.Lister(), podInformer.Informer().GetIndexer()
	if _, err := podInformer.Informer().AddEventHandler(rf.handler(func(obj metav1.Object) (string, bool) {
		return obj.GetNamespace() + "/" + obj.GetName(), true
	})); err != nil {
		return nil, fmt.Errorf("pod reflector: watching local pods: %w", err)
	}
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(local, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", env.NodeName).String()
		}),
		informers.WithTransform(stripManagedFields))
	nodeInformer := nodeFactory.Core().V1().Nodes().Informer()
	rf.providerUp.Store(true)
	if _, err := nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: rf.nodeChanged, UpdateFunc: func(_, o any) { rf.nodeChanged(o) },
	}); err != nil {
		return nil, fmt.Errorf("pod reflector: watching node %s: %w", env.NodeName, err)
	}
	factory.Start(ctx.Done())
	nodeFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.Informer().HasSynced) {
		broadcaster.Shutdown()
		rf.queue.ShutDown()
		return nil, fmt.Errorf("pod reflector: listing the pods of node %s: %w", env.NodeName, ctx.Err())
	}
	env.Namespaces.Subscribe(func(c namespaces.Change) { rf.namespaceChanged(ctx, c) })
	if env.TenantNamespace != "" {
		confs, err := restClient(env.LocalConfig, scheme, netv1beta1.GroupVersion)
		if err != nil {
			return nil, fmt.Errorf("pod reflector: Configuration client of the consumer cluster: %w", err)
		}
		rf.watchAddresses(ctx, confs)
	}

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rf.next(ctx) {
			}
		}()
	}
	go func() {
		<-ctx.Done()
		rf.queue.ShutDown()
		wg.Wait()
		factory.Shutdown()
		nodeFactory.Shutdown()
		rf.mu.Lock()
		for _, n := range rf.remotes {
			n.cancel()
		}
		rf.remotes = map[string]*remoteNamespace{}
		rf.mu.Unlock()
		broadcaster.Shutdown()
		close(rf.done)
	}()
	return rf, nil
}

func (rf *reflection) wait() { <-rf.done }

// handler enqueues the key that key derives from an object's events.
func (rf *reflection) handler(key func(metav1.Object) (string, bool)) cache.ResourceEventHandler {
	add := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if m, err := meta.Accessor(obj); err == nil {
			if k, ok := key(m); ok {
				rf.queue.Add(k)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, o any) { add(o) }, DeleteFunc: add}
}

// namespaceChanged starts or stops the remote watches of a namespace and reconciles its pods.
func (rf *reflection) namespaceChanged(ctx context.Context, c namespaces.Change) {
	if ctx.Err() != nil {
		return // an ended reflector's subscription
	}
	rf.mu.Lock()
	if old, ok := rf.remotes[c.Local]; ok {
		old.cancel()
		delete(rf.remotes, c.Local)
	}
	if c.Offloaded {
		rf.remotes[c.Local] = rf.watchRemote(ctx, c.Local, c.Remote)
		delete(rf.released, c.Local)
	} else {
		rf.released[c.Local] = true
	}
	rf.mu.Unlock()
	rf.log.Info("namespace offloading changed", "namespace", c.Local, "remote", c.Remote, "offloaded", c.Offloaded)
	if !c.Offloaded {
		rf.enqueueNamespace(c.Local)
	}
}

// restartRemotes watches every remote namespace afresh: after an outage, the informers would
// otherwise re-list only at the end of their back-off (up to 30s).
func (rf *reflection) restartRemotes(ctx context.Context) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	for local, old := range rf.remotes {
		old.cancel()
		rf.remotes[local] = rf.watchRemote(ctx, local, old.remote)
	}
}

// nodeChanged follows the node's Ready condition; when it turns Ready again, every pod is
// reconciled (statuses written during the outage were held back).
func (rf *reflection) nodeChanged(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	up := true
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			up = c.Status == corev1.ConditionTrue
		}
	}
	if was := rf.providerUp.Swap(up); up && !was {
		rf.log.Info("provider reachable again: watching it afresh and reconciling every pod")
		rf.restartRemotes(rf.ctx)
	}
}

func (rf *reflection) enqueueNamespace(ns string) {
	pods, err := rf.pods.Pods(ns).List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pods {
		rf.queue.Add(p.Namespace + "/" + p.Name)
	}
}

// watchRemote starts the informers of a remote namespace.
func (rf *reflection) watchRemote(ctx context.Context, local, remote string) *remoteNamespace {
	nctx, cancel := context.WithCancel(ctx)
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = rf.selector }
	pods := cache.NewSharedIndexInformer(cache.NewFilteredListWatchFromClient(rf.remote.CoreV1().RESTClient(), "pods", remote, tweak),
		&corev1.Pod{}, 0, cache.Indexers{})
	shadows := cache.NewSharedIndexInformer(cache.NewFilteredListWatchFromClient(rf.shadows, "shadowpods", remote, tweak),
		&offv1beta1.ShadowPod{}, 0, cache.Indexers{})
	n := &remoteNamespace{local: local, remote: remote, ctx: nctx, cancel: cancel, pods: pods, shadows: shadows}
	key := func(obj metav1.Object) (string, bool) { return local + "/" + obj.GetName(), true }
	for _, inf := range []cache.SharedIndexInformer{pods, shadows} {
		_ = inf.SetTransform(stripManagedFields) // only fails once started
		reg, err := inf.AddEventHandler(rf.handler(key))
		if err != nil {
			rf.log.Error(err, "watching remote namespace", "namespace", remote)
		}
		if inf == pods {
			n.remotePodSynced = reg.HasSynced
		} else {
			n.shadowsSynced = reg.HasSynced
		}
		go inf.RunWithContext(nctx)
	}
	go func() {
		// Local pods without remote objects have no remote event: reconcile them all once the
		// remote view is known.
		if cache.WaitForCacheSync(nctx.Done(), n.synced) {
			rf.enqueueNamespace(local)
		}
	}()
	return n
}

// remoteObjects returns the ShadowPod and remote pod of a local pod, from the watches of its
// namespace; ok is false while those are not started or not synced.
func (rf *reflection) remoteObjects(localNs, name string) (n *remoteNamespace, sp *offv1beta1.ShadowPod, pod *corev1.Pod, ok bool) {
	rf.mu.Lock()
	n = rf.remotes[localNs]
	rf.mu.Unlock()
	if n == nil || !n.synced() {
		return nil, nil, nil, false
	}
	key := n.remote + "/" + name
	if obj, exists, _ := n.shadows.GetStore().GetByKey(key); exists {
		sp = obj.(*offv1beta1.ShadowPod)
	}
	if obj, exists, _ := n.pods.GetStore().GetByKey(key); exists {
		pod = obj.(*corev1.Pod)
	}
	return n, sp, pod, true
}

// next processes one key; false once the queue is shut down.
func (rf *reflection) next(ctx context.Context) bool {
	key, quit := rf.queue.Get()
	if quit {
		return false
	}
	defer rf.queue.Done(key)
	if err := rf.reconcile(ctx, key); err != nil {
		if ctx.Err() == nil {
			rf.log.V(1).Info("reconciling pod failed; retrying", "pod", key, "error", err.Error())
		}
		rf.queue.AddRateLimited(key)
		return true
	}
	rf.queue.Forget(key)
	return true
}

// errNotMine: a ShadowPod of that name exists but is not this node's (another virtual node's,
// being cleaned up by its own reflector).
var errNotMine = errors.New("a ShadowPod of that name belonging to another virtual node exists")

// reconcile brings one local pod, its ShadowPod and its status in line.
func (rf *reflection) reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil //nolint:nilerr // a malformed key cannot be retried into shape
	}
	pod, err := rf.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		pod = nil
	} else if err != nil {
		return fmt.Errorf("reading local pod %s: %w", key, err)
	}
	if _, mapped := rf.env.Namespaces.Remote(ns); !mapped {
		switch {
		case pod == nil:
			return nil
		case pod.DeletionTimestamp != nil:
			return rf.finalize(ctx, pod) // nothing of it can run on the provider
		case rf.wasReleased(ns) && pod.Status.StartTime != nil && pod.Status.Phase != corev1.PodSucceeded:
			return rf.fail(ctx, pod, ReasonNamespaceReleased, fmt.Sprintf(
				"namespace %s is no longer offloaded to provider %s: the pod runs there no more", ns, rf.env.ProviderID))
		}
		return nil // not offloaded yet: stays Pending here
	}
	n, sp, rpod, ok := rf.remoteObjects(ns, name)
	if !ok {
		return nil // reconciled again once the remote watches are synced
	}
	switch {
	case pod == nil:
		if sp != nil && sp.DeletionTimestamp == nil {
			return rf.deleteShadow(ctx, sp)
		}
		return nil
	case pod.DeletionTimestamp != nil:
		if sp != nil && sp.DeletionTimestamp == nil {
			if err := rf.deleteShadow(ctx, sp); err != nil {
				return err
			}
		}
		if rpod != nil {
			return rf.reflectStatus(ctx, pod, rpod) // gone once the provider's kubelet is done
		}
		if sp != nil {
			return nil // its deletion is watched
		}
		return rf.finalize(ctx, pod)
	}
	if why := refused(&pod.Spec); why != "" {
		return rf.fail(ctx, pod, ReasonRefused, why)
	}
	if sp == nil {
		switch {
		case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
			return nil // finished: nothing to run
		case pod.Status.StartTime != nil:
			return rf.fail(ctx, pod, ReasonRemoteDeleted, fmt.Sprintf(
				"the pod's ShadowPod %s/%s was deleted on provider %s after the pod had started: the remote pod is gone for good",
				n.remote, name, rf.env.ProviderID))
		}
		return rf.createShadow(ctx, pod, n.remote)
	}
	if sp.Labels[consts.OriginNodeLabel] != rf.env.NodeName {
		return errNotMine
	}
	if upd := syncShadow(sp, shadowFor(pod, n.remote, rf.labels, rf.env.OffloadingPatch)); upd != nil {
		if _, err := rf.updateShadow(ctx, upd); err != nil {
			return err
		}
	}
	if rpod != nil {
		return rf.reflectStatus(ctx, pod, rpod)
	}
	if pod.Status.StartTime != nil && rf.providerUp.Load() {
		if st := notReady(&pod.Status, ReasonRemoteRecreating, "the provider re-creates the remote pod"); st != nil {
			return rf.updateStatus(ctx, pod, st)
		}
	}
	return nil
}

// createShadow creates the ShadowPod of a local pod, and first its service account.
func (rf *reflection) createShadow(ctx context.Context, pod *corev1.Pod, remoteNs string) error {
	if err := rf.ensureServiceAccount(ctx, remoteNs, serviceAccount(&pod.Spec)); err != nil {
		return err
	}
	sp := shadowFor(pod, remoteNs, rf.labels, rf.env.OffloadingPatch)
	err := rf.shadows.Post().Namespace(remoteNs).Resource("shadowpods").Body(sp).Do(ctx).Error()
	switch {
	case err == nil:
		rf.log.V(1).Info("offloaded pod", "pod", pod.Namespace+"/"+pod.Name, "remoteNamespace", remoteNs)
		return nil
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("ShadowPod %s/%s: %w (waiting for the watch to show it)", remoteNs, pod.Name, err)
	case apierrors.IsInvalid(err):
		return rf.fail(ctx, pod, ReasonRefused, fmt.Sprintf("provider %s refused the pod: %v", rf.env.ProviderID, err))
	case apierrors.IsForbidden(err):
		rf.recorder.Eventf(pod, corev1.EventTypeWarning, ReasonRefused, "provider %s refused the pod (retrying): %v", rf.env.ProviderID, err)
	}
	return fmt.Errorf("creating ShadowPod %s/%s on provider %s: %w", remoteNs, pod.Name, rf.env.ProviderID, err)
}

// ensureServiceAccount creates the remote service account a pod runs as, when missing.
func (rf *reflection) ensureServiceAccount(ctx context.Context, ns, name string) error {
	key := ns + "/" + name
	if _, ok := rf.sas.Load(key); ok {
		return nil
	}
	// Once per service account, not once per worker that meets it first.
	rf.saMu.Lock()
	defer rf.saMu.Unlock()
	if _, ok := rf.sas.Load(key); ok {
		return nil
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: rf.labels}}
	if _, err := rf.remote.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating service account %s on provider %s for the pods that run as it: %w", key, rf.env.ProviderID, err)
	}
	rf.sas.Store(key, struct{}{})
	return nil
}

func (rf *reflection) updateShadow(ctx context.Context, sp *offv1beta1.ShadowPod) (*offv1beta1.ShadowPod, error) {
	out := &offv1beta1.ShadowPod{}
	if err := rf.shadows.Put().Namespace(sp.Namespace).Resource("shadowpods").Name(sp.Name).Body(sp).Do(ctx).Into(out); err != nil {
		return nil, fmt.Errorf("updating ShadowPod %s/%s on provider %s: %w", sp.Namespace, sp.Name, rf.env.ProviderID, err)
	}
	return out, nil
}

func (rf *reflection) deleteShadow(ctx context.Context, sp *offv1beta1.ShadowPod) error {
	err := rf.shadows.Delete().Namespace(sp.Namespace).Resource("shadowpods").Name(sp.Name).
		Body(&metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &sp.UID}}).Do(context.WithoutCancel(ctx)).Error()
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting ShadowPod %s/%s on provider %s: %w", sp.Namespace, sp.Name, rf.env.ProviderID, err)
	}
	return nil
}

// finalize removes a local pod being deleted once nothing of it runs, as a kubelet does.
func (rf *reflection) finalize(ctx context.Context, pod *corev1.Pod) error {
	err := rf.local.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("removing local pod %s/%s whose remote pod is gone: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// reflectStatus writes the remote pod's status onto the local pod, unless the provider does
// not answer (then the remote watches show the last state known, not the current one).
func (rf *reflection) reflectStatus(ctx context.Context, pod, rpod *corev1.Pod) error {
	if !rf.providerUp.Load() {
		return nil
	}
	st := localStatus(pod, rpod)
	rf.addrs.localize(st)
	return rf.updateStatus(ctx, pod, st)
}

// wasReleased tells whether the namespace's offloading ended while the reflector ran.
func (rf *reflection) wasReleased(ns string) bool {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	return rf.released[ns]
}

// fail turns a local pod Failed with an Event saying why.
func (rf *reflection) fail(ctx context.Context, pod *corev1.Pod, reason, message string) error {
	if pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	rf.recorder.Event(pod, corev1.EventTypeWarning, reason, message)
	return rf.updateStatus(ctx, pod, failed(&pod.Status, reason, message))
}

func (rf *reflection) updateStatus(ctx context.Context, pod *corev1.Pod, st *corev1.PodStatus) error {
	if equality.Semantic.DeepEqual(&pod.Status, st) {
		return nil
	}
	upd := pod.DeepCopy()
	upd.Status = *st
	if _, err := rf.local.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("updating the status of local pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// stripManagedFields drops what the reflector never reads from cached objects.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// restClient is a REST client of API group version gv (a custom resource group: offloading.liqo.io
// for the provider's ShadowPods, networking.liqo.io for the consumer's Configurations).
func restClient(cfg *rest.Config, scheme *runtime.Scheme, gv schema.GroupVersion) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("REST client of %s: %w", gv, err)
	}
	return rc, nil
}
