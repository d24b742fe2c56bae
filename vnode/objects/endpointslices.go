package objects

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/gentype"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/reflection"
)

const (
	// resourceEndpointSlices is the local resource reflected as resourceShadowEndpointSlices.
	resourceEndpointSlices       = "endpointslices"
	resourceShadowEndpointSlices = "shadowendpointslices"
	// serviceIndex indexes EndpointSlices by the Service they belong to.
	serviceIndex = "service"
)

// endpointSlices are reflected as upstream Liqo v1.2's virtual kubelet reflects them, so that
// either's provider takes them (a consumer may write ShadowEndpointSlices in its remote
// namespaces, never EndpointSlices): each local EndpointSlice becomes a ShadowEndpointSlice of
// the same name in the remote namespace, labelled as the slice with upstream's
// endpointslice.kubernetes.io/managed-by value and the reflection labels, whose template is
// the slice as forgeEndpointSlice keeps it; the provider makes of it an EndpointSlice it owns.
// They follow their Service, judged by the Services' policy (servicePolicy), and their own
// opt-out.
func endpointSlices(servicePolicy Policy) handler {
	return &kind[*discoveryv1.EndpointSlice, *offv1beta1.ShadowEndpointSlice]{
		plural:       resourceEndpointSlices,
		remotePlural: resourceShadowEndpointSlices,
		informer: func(cs kubernetes.Interface, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return discoveryinformers.NewFilteredEndpointSliceInformer(cs, ns, noResync,
				cache.Indexers{serviceIndex: func(obj any) ([]string, error) {
					if m := reflection.Meta(obj); m != nil && m.GetLabels()[discoveryv1.LabelServiceName] != "" {
						return []string{m.GetLabels()[discoveryv1.LabelServiceName]}, nil
					}
					return nil, nil
				}}, tweak)
		},
		remoteInformer: func(rc rest.Interface, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return cache.NewSharedIndexInformer(cache.NewFilteredListWatchFromClient(rc, resourceShadowEndpointSlices, ns, tweak),
				&offv1beta1.ShadowEndpointSlice{}, noResync, cache.Indexers{})
		},
		remoteClient: func(rc rest.Interface, ns string) api[*offv1beta1.ShadowEndpointSlice] {
			return gentype.NewClient(resourceShadowEndpointSlices, rc, metav1.ParameterCodec, ns,
				func() *offv1beta1.ShadowEndpointSlice { return &offv1beta1.ShadowEndpointSlice{} })
		},
		skip: func(ns *reflection.Namespace, es *discoveryv1.EndpointSlice) string {
			return skipEndpointSlice(ns, es, servicePolicy)
		},
		forge:          forgeShadowEndpointSlice,
		labelOverrides: map[string]string{discoveryv1.LabelManagedBy: consts.UpstreamEndpointSliceManagedBy},
		content: func(next, want *offv1beta1.ShadowEndpointSlice) bool {
			if equality.Semantic.DeepEqual(next.Spec.Template, want.Spec.Template) {
				return false
			}
			next.Spec.Template = want.Spec.Template
			return true
		},
		dependsOn: resourceServices,
		dependents: func(ns *reflection.Namespace, obj any) []string {
			if m := reflection.Meta(obj); m != nil {
				return reflection.IndexedNames(ns.LocalInf[resourceEndpointSlices], serviceIndex, m.GetName())
			}
			return nil
		},
	}
}

// skipEndpointSlice reflects the slices of the Services that are reflected (under policy).
func skipEndpointSlice(ns *reflection.Namespace, es *discoveryv1.EndpointSlice, policy Policy) string {
	name := es.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return "it belongs to no Service"
	}
	svc, ok := reflection.Cached[*corev1.Service](ns.LocalInf[resourceServices], ns.Local, name)
	switch {
	case !ok:
		return "its Service is not there"
	case svc.Labels[consts.ReflectedLabel] == "true":
		return "its Service is itself a reflected copy"
	}
	if why := policy.reason(svc); why != "" {
		return "its Service is not reflected: " + why
	}
	return ""
}

// forgeShadowEndpointSlice is the ShadowEndpointSlice (without metadata) of l: its template
// keeps the endpoints that live in the consumer's cluster. Endpoints on the virtual node itself
// are dropped: they are the offloaded pods, which run on the provider, where the reflected
// Service selects them and the provider's own EndpointSlice controller lists them with their
// real addresses (the consumer sees them under their remapped ones). What points into the
// consumer's topology (node name, zone, hints, the local pod reference) means nothing on the
// provider and goes too. The provider writes the addresses in the consumer's networks as it
// reaches them (controllers/shadowendpointslice remaps them).
func forgeShadowEndpointSlice(env *vnode.Env, _ *reflection.Namespace, l *discoveryv1.EndpointSlice) *offv1beta1.ShadowEndpointSlice {
	tpl := offv1beta1.EndpointSliceTemplate{AddressType: l.AddressType}
	for _, p := range l.Ports {
		tpl.Ports = append(tpl.Ports, *p.DeepCopy())
	}
	for _, ep := range l.Endpoints {
		if ep.NodeName != nil && *ep.NodeName == env.NodeName {
			continue
		}
		e := *ep.DeepCopy()
		e.NodeName, e.Zone, e.Hints, e.TargetRef = nil, nil, nil, nil
		tpl.Endpoints = append(tpl.Endpoints, e)
	}
	return &offv1beta1.ShadowEndpointSlice{Spec: offv1beta1.ShadowEndpointSliceSpec{Template: tpl}}
}
