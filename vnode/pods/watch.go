package pods

// The reflector's watches: the informers of the consumer's pods and node and of each remote
// namespace, and their event handlers, which feed the work queue.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/vnode/namespaces"
)

// watchLocal starts the informers of the consumer cluster: the pods bound to the node, whose
// events feed the queue, and the node itself, whose Ready condition says whether the provider
// answers (nodeChanged). It returns their factories and whether the pods are listed.
func (rf *reflection) watchLocal(ctx context.Context) ([]informers.SharedInformerFactory, cache.InformerSynced, error) {
	factory := localFactory(rf.local, "spec.nodeName", rf.env.NodeName)
	podInformer := factory.Core().V1().Pods()
	rf.pods, rf.podIndex = podInformer.Lister(), podInformer.Informer().GetIndexer()
	if _, err := podInformer.Informer().AddEventHandler(rf.handler(func(obj metav1.Object) (string, bool) {
		return obj.GetNamespace() + "/" + obj.GetName(), true
	})); err != nil {
		return nil, nil, fmt.Errorf("pod reflector: watching local pods: %w", err)
	}
	nodeFactory := localFactory(rf.local, "metadata.name", rf.env.NodeName)
	nodeInformer := nodeFactory.Core().V1().Nodes().Informer()
	rf.providerUp.Store(true)
	if _, err := nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: rf.nodeChanged, UpdateFunc: func(_, o any) { rf.nodeChanged(o) },
	}); err != nil {
		return nil, nil, fmt.Errorf("pod reflector: watching node %s: %w", rf.env.NodeName, err)
	}
	factory.Start(ctx.Done())
	nodeFactory.Start(ctx.Done())
	return []informers.SharedInformerFactory{factory, nodeFactory}, podInformer.Informer().HasSynced, nil
}

// localFactory is an informer factory of the consumer cluster's objects whose field has that
// value, without their managed fields.
func localFactory(local kubernetes.Interface, field, value string) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(local, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector(field, value).String()
		}),
		informers.WithTransform(stripManagedFields))
}

// stopRemotes stops the watches of every remote namespace.
func (rf *reflection) stopRemotes() {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	for _, n := range rf.remotes {
		n.cancel()
	}
	rf.remotes = map[string]*remoteNamespace{}
}

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
	_ = pods.SetTransform(statusOnly)    // only fails once started
	_ = shadows.SetTransform(thinShadow) // (likewise)
	for _, inf := range []cache.SharedIndexInformer{pods, shadows} {
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
	n.warnings = rf.watchWarnings(nctx, n)
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

// statusOnly drops from a cached remote pod what the reflector never reads: its managed fields
// and its spec (the local pod's status follows the remote pod's status alone; the spec is the
// ShadowPod's, cached with it): a pod spec is most of a pod's size.
func statusOnly(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		p.Spec = corev1.PodSpec{}
	}
	return stripManagedFields(obj)
}

// stripManagedFields drops what the reflector never reads from cached objects.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
