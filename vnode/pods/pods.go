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
//     liqo-kube-root-ca.crt on the provider. Service accounts and tokens, as upstream's
//     virtual kubelet forges them (serviceaccounts.go): no service account is created on the
//     provider; the remote pod runs with none and automountServiceAccountToken false, with the
//     consumer's tokens (Reflector.APIServer, tokens.go) or none, unless annotated
//     liqo.io/api-server-support=remote (the provider's service account of its name, which
//     must exist there; a pod the provider does not create gets a Warning Event and Ready
//     False, reason ProviderPodNotCreated).
//   - Offloading patch: the VirtualNode's spec.offloadingPatch (Env.OffloadingPatch), as
//     upstream's virtual kubelet applies it: its nodeSelector, tolerations, node affinity and
//     runtimeClassName go into the spec of the ShadowPods it creates (see patchSpec); the keys of
//     labelsNotReflected and annotationsNotReflected are left out of their labels and annotations.
//   - Refused: a pod asking for the host's network, PID or IPC namespaces is not offloaded: it
//     turns Failed (reason OffloadingRefused) with a Warning Event saying why. So does a pod
//     the provider refuses for good: its ShadowPod refused as invalid (e.g. what its Pod
//     Security level on the provider refuses: the message names the fields), or Failed on the
//     provider before its pod ever ran (the provider's latest Warning Event about it says why).
//     A ShadowPod the provider forbids for now (beyond the grant, a cordoned slice) is retried,
//     with a Warning Event on the pod quoting the provider.
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
// namespace one informer for the node's ShadowPods, one for their pods (label selector on
// the reflection labels) and one for the Warning Events about ShadowPods, started and stopped as namespaces are offloaded or released
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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/namespaces"
	vreflection "github.com/peerkit/terraform-provider-liqo/vnode/reflection"
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
	// APIServer, when set, gives offloaded pods service-account tokens of the consumer, for the
	// consumer's API server at its address (tokens.go), instead of the provider's.
	APIServer *APIServerSupport
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
	// apiServer is Reflector.APIServer; tokens the origin tokens written, with it.
	apiServer *APIServerSupport
	tokens    tokenStore
	done      chan struct{}
}

// remoteNamespace watches the node's ShadowPods and their pods in one remote namespace.
type remoteNamespace struct {
	local, remote   string
	ctx             context.Context // ends when the namespace's watches stop
	cancel          context.CancelFunc
	shadows, pods   cache.SharedIndexInformer
	warnings        cache.SharedIndexInformer // watchWarnings
	shadowsSynced   cache.InformerSynced
	remotePodSynced cache.InformerSynced
}

func (n *remoteNamespace) synced() bool { return n.shadowsSynced() && n.remotePodSynced() }

// start builds the clients, watches the node's pods and the node, follows the offloaded
// namespaces and starts the workers; everything stops once ctx ends.
func (r *Reflector) start(ctx context.Context, env *vnode.Env) (*reflection, error) {
	workers, qps, burst := r.limits()
	if env.LocalConfig == nil || env.RemoteConfig == nil {
		return nil, errors.New("pod reflector: the environment has no LocalConfig or RemoteConfig")
	}
	if r.APIServer != nil && r.APIServer.Host == "" {
		return nil, errors.New("pod reflector: API server support needs the host of the consumer's API server that the provider's pods reach")
	}
	cl, err := newClients(env, qps, burst)
	if err != nil {
		return nil, err
	}
	rf := newReflection(ctx, env, cl)
	rf.apiServer = r.APIServer
	broadcaster := rf.startRecorder(ctx, cl.scheme)
	factories, podsSynced, err := rf.watchLocal(ctx)
	if err != nil {
		return nil, err
	}
	if !cache.WaitForCacheSync(ctx.Done(), podsSynced) {
		broadcaster.Shutdown()
		rf.queue.ShutDown()
		return nil, fmt.Errorf("pod reflector: listing the pods of node %s: %w", env.NodeName, ctx.Err())
	}
	env.Namespaces.Subscribe(func(c namespaces.Change) { rf.namespaceChanged(ctx, c) })
	if env.TenantNamespace != "" {
		confs, err := vreflection.GroupRESTClient(env.LocalConfig, cl.scheme, netv1beta1.GroupVersion)
		if err != nil {
			return nil, fmt.Errorf("pod reflector: Configuration client of the consumer cluster: %w", err)
		}
		rf.watchAddresses(ctx, confs)
	}
	rf.runWorkers(ctx, workers, factories, broadcaster)
	return rf, nil
}

// limits returns Workers, QPS and Burst, each replaced by its default when not set.
func (r *Reflector) limits() (workers int, qps float32, burst int) {
	workers, qps, burst = r.Workers, r.QPS, r.Burst
	if workers <= 0 {
		workers = 64
	}
	if qps <= 0 {
		qps = 200
	}
	if burst <= 0 {
		burst = 400
	}
	return workers, qps, burst
}

// clients are the reflector's clients of the consumer (local) and the provider (remote).
type clients struct {
	local, remote kubernetes.Interface
	shadows       rest.Interface // the provider's offloading.liqo.io/v1beta1
	scheme        *runtime.Scheme
}

// newClients builds the clients of env's clusters, each limited to qps and burst.
func newClients(env *vnode.Env, qps float32, burst int) (*clients, error) {
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
	shadows, err := vreflection.GroupRESTClient(tune(env.RemoteConfig), scheme, offv1beta1.GroupVersion)
	if err != nil {
		return nil, fmt.Errorf("pod reflector: ShadowPod client of provider %s: %w", env.ProviderID, err)
	}
	return &clients{local: local, remote: remote, shadows: shadows, scheme: scheme}, nil
}

// newReflection is a reflection of env's node with clients cl, living as long as ctx.
func newReflection(ctx context.Context, env *vnode.Env, cl *clients) *reflection {
	lbls := reflectionLabels(string(env.ConsumerID), string(env.ProviderID), env.NodeName)
	return &reflection{
		env: env, log: env.Log.WithValues("reflector", "pods"), local: cl.local, remote: cl.remote, shadows: cl.shadows,
		labels: lbls, selector: labels.SelectorFromSet(lbls).String(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pods-" + env.NodeName}),
		remotes:  map[string]*remoteNamespace{},
		released: map[string]bool{},
		ctx:      ctx,
		done:     make(chan struct{}),
	}
}

// startRecorder records the reflector's Events in the consumer cluster, as the node's kubelet.
func (rf *reflection) startRecorder(ctx context.Context, scheme *runtime.Scheme) record.EventBroadcaster {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: rf.local.CoreV1().Events("")})
	rf.recorder = broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "liqo-virtual-kubelet", Host: rf.env.NodeName})
	return broadcaster
}

// runWorkers starts the workers draining the queue and, once ctx ends, stops them, then the
// local informers of factories, the remote watches and the Event broadcaster, and closes done.
func (rf *reflection) runWorkers(ctx context.Context, workers int, factories []informers.SharedInformerFactory, broadcaster record.EventBroadcaster) {
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
		for _, f := range factories {
			f.Shutdown()
		}
		rf.stopRemotes()
		broadcaster.Shutdown()
		close(rf.done)
	}()
}

func (rf *reflection) wait() { <-rf.done }
