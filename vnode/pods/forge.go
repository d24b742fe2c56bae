package pods

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity"
	"github.com/peerkit/terraform-provider-liqo/vnode"
)

// reflectionLabels are the labels every ShadowPod (and so its pod) carries on the provider:
// reflected, from which consumer (ours and upstream's keys, which upstream's ShadowPod webhook
// requires), for which provider, through which virtual node.
func reflectionLabels(consumer, provider, node string) map[string]string {
	l := consts.ReflectionLabels(consumer, provider)
	l[consts.OriginNodeLabel] = node
	return l
}

// refused says why a pod may not be offloaded, or "".
func refused(spec *corev1.PodSpec) string {
	if field, namespace := podsecurity.HostNamespace(spec); field != "" {
		return fmt.Sprintf("spec.%s is true: an offloaded pod cannot share a node's %s namespace (its node is a virtual node "+
			"standing for another cluster); set %s to false or keep the pod off virtual nodes", field, namespace, field)
	}
	return ""
}

// liqoRuntimeClass is the RuntimeClass upstream Liqo installs on the consumer to place pods on
// virtual nodes: it means nothing on the provider.
const liqoRuntimeClass = "liqo"

// shadowFor is the ShadowPod that runs local in remoteNamespace, with the virtual node's
// offloading patch (nil: none) applied.
func shadowFor(local *corev1.Pod, remoteNamespace string, labels map[string]string, patch *offv1beta1.OffloadingPatch) *offv1beta1.ShadowPod {
	spec := remoteSpec(&local.Spec)
	patchSpec(spec, patch)
	sp := &offv1beta1.ShadowPod{
		ObjectMeta: metav1.ObjectMeta{Name: local.Name, Namespace: remoteNamespace},
		Spec:       offv1beta1.ShadowPodSpec{Pod: *spec},
	}
	sp.Labels, sp.Annotations = shadowMeta(local, labels, patch)
	return sp
}

// shadowMeta are the labels and annotations of a local pod's ShadowPod: the pod's own but for
// those the offloading patch (may be nil) does not reflect, plus the reflection labels.
func shadowMeta(local *corev1.Pod, reflection map[string]string, patch *offv1beta1.OffloadingPatch) (map[string]string, map[string]string) {
	var notLabels, notAnnotations []string
	if patch != nil {
		notLabels, notAnnotations = patch.LabelsNotReflected, patch.AnnotationsNotReflected
	}
	labels := make(map[string]string, len(local.Labels)+len(reflection))
	maps.Copy(labels, local.Labels)
	for _, k := range notLabels {
		delete(labels, k)
	}
	maps.Copy(labels, reflection)
	var annotations map[string]string
	if len(local.Annotations) > 0 {
		annotations = maps.Clone(local.Annotations)
		for _, k := range notAnnotations {
			delete(annotations, k)
		}
		if len(annotations) == 0 {
			annotations = nil
		}
	}
	return labels, annotations
}

// patchSpec applies a virtual node's offloading patch (nil: none) to the spec of an offloaded
// pod (made by remoteSpec, which dropped the local node selector and affinity: they placed the
// pod on the virtual node), as upstream's virtual kubelet does: its node selector is merged into
// the pod's, its tolerations are added to the pod's, its node affinity becomes the pod's, and
// its runtime class is set when the pod names none of its own (or upstream's consumer-side
// "liqo" class).
func patchSpec(s *corev1.PodSpec, patch *offv1beta1.OffloadingPatch) {
	if patch == nil {
		return
	}
	if len(patch.NodeSelector) > 0 {
		if s.NodeSelector == nil {
			s.NodeSelector = make(map[string]string, len(patch.NodeSelector))
		}
		maps.Copy(s.NodeSelector, patch.NodeSelector)
	}
	for i := range patch.Tolerations {
		s.Tolerations = append(s.Tolerations, *patch.Tolerations[i].DeepCopy())
	}
	if patch.Affinity != nil && patch.Affinity.NodeAffinity != nil {
		if s.Affinity == nil {
			s.Affinity = &corev1.Affinity{}
		}
		s.Affinity.NodeAffinity = patch.Affinity.NodeAffinity.DeepCopy()
	}
	if rc := patch.RuntimeClassName; rc != nil && *rc != "" && *rc != liqoRuntimeClass &&
		(s.RuntimeClassName == nil || *s.RuntimeClassName == "" || *s.RuntimeClassName == liqoRuntimeClass) {
		s.RuntimeClassName = ptr.To(*rc)
	}
}

// remoteSpec is the spec a local pod runs with on the provider: what placed it on the virtual
// node is stripped (the provider's scheduler places it among the provider's nodes), as is what
// only the local cluster's admission may set; references to reflected objects keep their names
// but for the root CA ConfigMap, reflected under another name.
//
// Service-account token: a projected volume with a serviceAccountToken source is left as it is
// here (its CA stays the provider's own kube-root-ca.crt, the one that verifies the provider's
// API server); forgeShadow then sets the service account and rewrites or drops the token
// sources by the pod's token mode (serviceaccounts.go). Other references to kube-root-ca.crt
// (the consumer's CA) become liqo-kube-root-ca.crt.
func remoteSpec(local *corev1.PodSpec) *corev1.PodSpec {
	s := local.DeepCopy()
	s.NodeName = ""
	s.NodeSelector = nil
	s.Affinity = nil
	s.TopologySpreadConstraints = nil
	s.SchedulerName = ""
	s.Tolerations = slices.DeleteFunc(s.Tolerations, func(t corev1.Toleration) bool { return t.Key == vnode.Taint.Key })
	if len(s.Tolerations) == 0 {
		s.Tolerations = nil
	}
	// Set by the local cluster's admission from objects that may not exist on the provider.
	s.Priority, s.PriorityClassName, s.PreemptionPolicy = nil, "", nil
	s.Overhead = nil
	// The local pod already passed its gates; readiness gates name conditions only local
	// controllers set; ephemeral containers cannot be created with a pod.
	s.SchedulingGates, s.ReadinessGates, s.EphemeralContainers = nil, nil, nil
	for i := range s.Volumes {
		v := &s.Volumes[i]
		if v.ConfigMap != nil {
			v.ConfigMap.Name = remoteConfigMap(v.ConfigMap.Name)
		}
		if v.Projected != nil && !hasTokenSource(v.Projected) {
			for j := range v.Projected.Sources {
				if cm := v.Projected.Sources[j].ConfigMap; cm != nil {
					cm.Name = remoteConfigMap(cm.Name)
				}
			}
		}
	}
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			c := &cs[i]
			for j := range c.EnvFrom {
				if ref := c.EnvFrom[j].ConfigMapRef; ref != nil {
					ref.Name = remoteConfigMap(ref.Name)
				}
			}
			for j := range c.Env {
				if vf := c.Env[j].ValueFrom; vf != nil && vf.ConfigMapKeyRef != nil {
					vf.ConfigMapKeyRef.Name = remoteConfigMap(vf.ConfigMapKeyRef.Name)
				}
			}
		}
	}
	return s
}

func hasTokenSource(p *corev1.ProjectedVolumeSource) bool {
	return slices.ContainsFunc(p.Sources, func(s corev1.VolumeProjection) bool { return s.ServiceAccountToken != nil })
}

// remoteConfigMap is the provider-side name of a reflected ConfigMap.
func remoteConfigMap(name string) string {
	if name == consts.RootCAConfigMap {
		return consts.ReflectedRootCAConfigMap
	}
	return name
}

// serviceAccount is the service account a pod runs as.
func serviceAccount(spec *corev1.PodSpec) string {
	if spec.ServiceAccountName != "" {
		return spec.ServiceAccountName
	}
	if spec.DeprecatedServiceAccount != "" {
		return spec.DeprecatedServiceAccount
	}
	return "default"
}

// localStatus is the status of local once its remote pod is reflected: what the provider's
// kubelet reports (phase, conditions, container statuses with restart counts, IPs, start
// time), keeping what only the local cluster knows (QoS class, host IPs, conditions of types
// the remote pod does not report, such as readiness gates set by local controllers).
func localStatus(local, remote *corev1.Pod) *corev1.PodStatus {
	st := local.Status.DeepCopy()
	r := remote.Status.DeepCopy()
	st.Phase, st.Message, st.Reason = r.Phase, r.Message, r.Reason
	st.PodIP, st.PodIPs = r.PodIP, r.PodIPs
	st.StartTime = r.StartTime
	st.ContainerStatuses, st.InitContainerStatuses, st.EphemeralContainerStatuses = r.ContainerStatuses, r.InitContainerStatuses, nil
	// The local scheduler's PodScheduled stays, unless the provider cannot place the pod: its
	// own scheduling is a detail (and copying it would cost a status write per pod).
	conds := r.Conditions
	if i := slices.IndexFunc(conds, func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled }); i >= 0 && conds[i].Status == corev1.ConditionTrue {
		if j := slices.IndexFunc(local.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled }); j >= 0 &&
			local.Status.Conditions[j].Status == corev1.ConditionTrue {
			conds[i] = local.Status.Conditions[j]
		}
	}
	for _, c := range local.Status.Conditions {
		if !slices.ContainsFunc(conds, func(rc corev1.PodCondition) bool { return rc.Type == c.Type }) {
			conds = append(conds, c)
		}
	}
	st.Conditions = conds
	return st
}

// notReady returns a copy of status with the Ready and ContainersReady conditions False for
// reason, or nil when they already are.
func notReady(status *corev1.PodStatus, reason, message string) *corev1.PodStatus {
	st := status.DeepCopy()
	changed := false
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if (c.Type == corev1.PodReady || c.Type == corev1.ContainersReady) && c.Status != corev1.ConditionFalse {
			c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionFalse, reason, message, metav1.Now()
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return st
}

// failed returns status turned Failed for reason, as a kubelet that rejects a pod reports it.
func failed(status *corev1.PodStatus, reason, message string) *corev1.PodStatus {
	st := status.DeepCopy()
	st.Phase, st.Reason, st.Message = corev1.PodFailed, reason, message
	if ns := notReady(st, reason, message); ns != nil {
		st = ns
	}
	// Its containers run no more: none ready, each terminated (kubectl's READY column and
	// status read them).
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		cs.Ready, cs.Started = false, ptr.To(false)
		if cs.State.Terminated == nil {
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: reason, Message: message, FinishedAt: metav1.Now()}}
		}
	}
	return st
}
