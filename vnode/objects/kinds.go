package objects

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/reflection"
)

// noResync: informers hear of changes through their watch only.
const noResync time.Duration = 0

// resourceServices is the Services' resource name, which EndpointSlices depend on.
const resourceServices = "services"

// RemoteConfigMapName returns the provider-side name of a local ConfigMap: kube-root-ca.crt
// becomes liqo-kube-root-ca.crt (every namespace of the provider has its own kube-root-ca.crt);
// a local liqo-kube-root-ca.crt or liqo-reflected-secrets is not reflected (""), as its name is
// taken.
func RemoteConfigMapName(local string) string {
	return otherSideConfigMapName(local, consts.RootCAConfigMap, consts.ReflectedRootCAConfigMap)
}

// LocalConfigMapName is RemoteConfigMapName's inverse ("" for the provider's own root CA and
// the Secrets' ledger).
func LocalConfigMapName(remote string) string {
	return otherSideConfigMapName(remote, consts.ReflectedRootCAConfigMap, consts.RootCAConfigMap)
}

// otherSideConfigMapName is the name, in the other cluster, of the ConfigMap named name: the
// root CA's (rootCA on this side) is renamed otherRootCA; every other name stays, but
// otherRootCA and the Secrets' ledger, taken on the other side, are not reflected ("").
func otherSideConfigMapName(name, rootCA, otherRootCA string) string {
	switch name {
	case rootCA:
		return otherRootCA
	case otherRootCA, SecretLedgerConfigMap:
		return ""
	}
	return name
}

func configMaps(policy Policy) handler {
	return &sameKind[*corev1.ConfigMap]{
		plural: "configmaps",
		policy: policy,
		// Offloaded pods mount the root CA: reflected whatever the policy, unless opted out.
		exempt: func(cm *corev1.ConfigMap) bool { return cm.Name == consts.RootCAConfigMap },
		informer: func(cs kubernetes.Interface, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return coreinformers.NewFilteredConfigMapInformer(cs, ns, noResync, cache.Indexers{}, tweak)
		},
		client:   func(cs kubernetes.Interface, ns string) api[*corev1.ConfigMap] { return cs.CoreV1().ConfigMaps(ns) },
		toRemote: RemoteConfigMapName,
		toLocal:  LocalConfigMapName,
		forge: func(_ *vnode.Env, _ *reflection.Namespace, l *corev1.ConfigMap) *corev1.ConfigMap {
			l = l.DeepCopy()
			return &corev1.ConfigMap{Data: l.Data, BinaryData: l.BinaryData, Immutable: l.Immutable}
		},
		content: func(next, want *corev1.ConfigMap) bool {
			if equality.Semantic.DeepEqual(next.Data, want.Data) && equality.Semantic.DeepEqual(next.BinaryData, want.BinaryData) &&
				equality.Semantic.DeepEqual(next.Immutable, want.Immutable) {
				return false
			}
			next.Data, next.BinaryData, next.Immutable = want.Data, want.BinaryData, want.Immutable
			return true
		},
	}
}

// secrets are reflected write-only (writeonly.go): the consumer may not read Secrets on the
// provider.
func secrets(policy Policy) handler {
	return &sameKind[*corev1.Secret]{
		plural: "secrets",
		policy: policy,
		ledger: SecretLedgerConfigMap,
		informer: func(cs kubernetes.Interface, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return coreinformers.NewFilteredSecretInformer(cs, ns, noResync, cache.Indexers{}, tweak)
		},
		client: func(cs kubernetes.Interface, ns string) api[*corev1.Secret] { return cs.CoreV1().Secrets(ns) },
		// Service-account tokens are neither cached nor reflected: offloaded pods get tokens
		// requested on the provider.
		filter: func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermNotEqualSelector("type", string(corev1.SecretTypeServiceAccountToken)).String()
		},
		skip: func(_ *reflection.Namespace, s *corev1.Secret) string {
			if s.Type == corev1.SecretTypeServiceAccountToken {
				return "service-account token"
			}
			return ""
		},
		forge: func(_ *vnode.Env, _ *reflection.Namespace, l *corev1.Secret) *corev1.Secret {
			l = l.DeepCopy()
			return &corev1.Secret{Data: l.Data, Type: l.Type, Immutable: l.Immutable}
		},
	}
}

func services(policy Policy) handler {
	return &sameKind[*corev1.Service]{
		plural: resourceServices,
		policy: policy,
		informer: func(cs kubernetes.Interface, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return coreinformers.NewFilteredServiceInformer(cs, ns, noResync, cache.Indexers{}, tweak)
		},
		client:  func(cs kubernetes.Interface, ns string) api[*corev1.Service] { return cs.CoreV1().Services(ns) },
		forge:   func(_ *vnode.Env, _ *reflection.Namespace, l *corev1.Service) *corev1.Service { return forgeService(l) },
		content: serviceContent,
	}
}

// forgeService keeps a Service's spec but what the provider allocates itself (cluster IPs,
// node ports, health-check node port, IP families) and what would reach into the provider's
// network (external IPs, a requested load-balancer IP).
func forgeService(l *corev1.Service) *corev1.Service {
	spec := *l.Spec.DeepCopy()
	if spec.ClusterIP != corev1.ClusterIPNone {
		spec.ClusterIP = ""
		spec.ClusterIPs = nil
	} else {
		spec.ClusterIPs = []string{corev1.ClusterIPNone}
	}
	spec.IPFamilies = nil
	spec.HealthCheckNodePort = 0
	spec.ExternalIPs = nil
	spec.LoadBalancerIP = "" // deprecated, still to be cleared: the provider chooses its own
	for i := range spec.Ports {
		spec.Ports[i].NodePort = 0
	}
	return &corev1.Service{Spec: spec}
}

// serviceContent fills the wanted spec with what the provider allocated on the current copy,
// then compares.
func serviceContent(next, want *corev1.Service) bool {
	spec := *want.Spec.DeepCopy()
	cur := next.Spec
	if spec.Type != corev1.ServiceTypeExternalName && spec.ClusterIP == "" {
		spec.ClusterIP, spec.ClusterIPs = cur.ClusterIP, cur.ClusterIPs
	}
	if spec.Type != corev1.ServiceTypeExternalName {
		if spec.IPFamilies == nil {
			spec.IPFamilies = cur.IPFamilies
		}
		if spec.IPFamilyPolicy == nil {
			spec.IPFamilyPolicy = cur.IPFamilyPolicy
		}
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal &&
		spec.HealthCheckNodePort == 0 {
		spec.HealthCheckNodePort = cur.HealthCheckNodePort
	}
	if spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer {
		for i, p := range spec.Ports {
			for _, c := range cur.Ports {
				if p.NodePort == 0 && c.Port == p.Port && c.Protocol == p.Protocol {
					spec.Ports[i].NodePort = c.NodePort
				}
			}
		}
	}
	if equality.Semantic.DeepEqual(cur, spec) {
		return false
	}
	next.Spec = spec
	return true
}
