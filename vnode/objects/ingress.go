package objects

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	networkinginformers "k8s.io/client-go/informers/networking/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/reflection"
)

// IngressClassAnnotation is the ingress class's annotation of old (kubernetes.io/ingress.class),
// which an Ingress may not carry together with spec.ingressClassName.
const IngressClassAnnotation = "kubernetes.io/ingress.class"

// IngressReflector reflects the networking.k8s.io/v1 Ingresses of the offloaded namespaces of
// one virtual node to the provider, as Reflector does ConfigMaps and Services: the remote copy
// has the local spec, whose backends name the Services (and TLS Secrets) of the same names that
// Reflector reflects; the provider's ingress controller writes the copy's status, which is not
// brought back. It runs apart from Reflector so that a provider that does not let the consumer
// reach Ingresses (an older one) stops nothing else. It implements vnode.Reflector.
type IngressReflector struct {
	// Workers, QPS and Burst are as Reflector's.
	Workers int
	QPS     float32
	Burst   int
	// Policy says which Ingresses are reflected (default DenyList).
	Policy Policy
	// RemoteClass, when set, is the ingressClassName of every remote copy (upstream's
	// --remote-real-ingress-class-name), whose kubernetes.io/ingress.class annotation is then
	// dropped; "": the copy keeps the local class, field and annotation.
	RemoteClass string
}

var _ vnode.Reflector = (*IngressReflector)(nil)

// Name names the reflector in logs.
func (r *IngressReflector) Name() string { return "ingresses" }

// Run reflects until ctx ends.
func (r *IngressReflector) Run(ctx context.Context, env *vnode.Env) error {
	policy, err := ParsePolicy(string(r.Policy))
	if err != nil {
		return errorf(err, "%s reflector", r.Name())
	}
	return runKinds(ctx, env, r.Name(), limits{workers: r.Workers, qps: r.QPS, burst: r.Burst}, 0,
		[]handler{ingresses(policy, r.RemoteClass)})
}

func ingresses(policy Policy, remoteClass string) handler {
	k := &sameKind[*networkingv1.Ingress]{
		plural: "ingresses",
		policy: policy,
		informer: func(cs kubernetes.Interface, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return networkinginformers.NewFilteredIngressInformer(cs, ns, noResync, cache.Indexers{}, tweak)
		},
		client: func(cs kubernetes.Interface, ns string) api[*networkingv1.Ingress] {
			return cs.NetworkingV1().Ingresses(ns)
		},
		forge: func(_ *vnode.Env, _ *reflection.Namespace, l *networkingv1.Ingress) *networkingv1.Ingress {
			spec := *l.Spec.DeepCopy()
			if remoteClass != "" {
				spec.IngressClassName = &remoteClass
			}
			return &networkingv1.Ingress{Spec: spec}
		},
		content: func(next, want *networkingv1.Ingress) bool {
			if equality.Semantic.DeepEqual(next.Spec, want.Spec) {
				return false
			}
			next.Spec = want.Spec
			return true
		},
	}
	if remoteClass != "" {
		k.dropAnnotations = []string{IngressClassAnnotation}
	}
	return k
}
