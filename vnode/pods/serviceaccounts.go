package pods

// Service accounts of offloaded pods, as upstream Liqo v1.2's virtual kubelet forges them: the
// reflector never creates a service account on the provider (upstream's
// liqo-virtual-kubelet-remote role does not allow it, and ours no longer does). What a remote
// pod runs as depends on its token mode (tokenModeOf):
//
//   - tokensOrigin (Reflector.APIServer, the default when set): no service account
//     (serviceAccountName empty, so the provider's "default", and automountServiceAccountToken
//     false); its token sources read the consumer's tokens from the Secret <pod>-token
//     (tokens.go).
//   - tokensNone (no Reflector.APIServer, or annotation liqo.io/api-server-support=disabled):
//     no service account either, and its token sources are dropped: the pod runs with no token.
//   - tokensProvider (annotation liqo.io/api-server-support=remote): the pod's service account
//     name is kept (or the one annotation liqo.io/remote-service-account-name gives), with
//     automountServiceAccountToken true and its token sources as they are: the provider's
//     kubelet issues tokens of the provider's service account of that name, which the
//     provider's administrator creates. Missing, the provider cannot create the pod: see
//     reportNotCreated.

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// tokenMode is how an offloaded pod gets service-account tokens on the provider.
type tokenMode int

const (
	// tokensNone: none.
	tokensNone tokenMode = iota
	// tokensOrigin: the consumer's, through the <pod>-token Secret.
	tokensOrigin
	// tokensProvider: the provider's, for its service account of the pod's (or the annotated) name.
	tokensProvider
)

// tokenModeOf is the token mode of a local pod: the reflector's default (tokensOrigin with API
// server support, tokensNone without), unless its liqo.io/api-server-support annotation says
// remote or disabled (as upstream reads it: other values keep the default).
func tokenModeOf(pod *corev1.Pod, apiServer *APIServerSupport) tokenMode {
	switch pod.Annotations[consts.APIServerSupportAnnotation] {
	case consts.APIServerSupportRemote:
		return tokensProvider
	case consts.APIServerSupportDisabled:
		return tokensNone
	}
	if apiServer != nil {
		return tokensOrigin
	}
	return tokensNone
}

// forgeShadow is the ShadowPod a local pod is created with in remoteNs: shadowFor's, with the
// service account and tokens of its token mode.
func (rf *reflection) forgeShadow(pod *corev1.Pod, remoteNs string) *offv1beta1.ShadowPod {
	sp := shadowFor(pod, remoteNs, rf.labels, rf.env.OffloadingPatch)
	mode := tokenModeOf(pod, rf.apiServer)
	setServiceAccount(&sp.Spec.Pod, pod, mode)
	switch mode {
	case tokensOrigin:
		rf.apiServer.rewrite(&sp.Spec.Pod, pod.Name)
	case tokensNone:
		dropTokenSources(&sp.Spec.Pod)
	case tokensProvider:
	}
	return sp
}

// setServiceAccount sets the service account a remote pod spec runs as in mode (see the file's
// comment).
func setServiceAccount(spec *corev1.PodSpec, local *corev1.Pod, mode tokenMode) {
	spec.DeprecatedServiceAccount = ""
	if mode != tokensProvider {
		spec.ServiceAccountName, spec.AutomountServiceAccountToken = "", ptr.To(false)
		return
	}
	name, ok := local.Annotations[consts.RemoteServiceAccountNameAnnotation]
	if !ok {
		name = serviceAccount(&local.Spec)
	}
	spec.ServiceAccountName, spec.AutomountServiceAccountToken = name, ptr.To(true)
}

// dropTokenSources removes the serviceAccountToken sources of a remote pod spec's projected
// volumes (remoteSpec's, which kept them with the provider's CA): what is left of such a volume
// refers to the consumer's CA, as any other reference to it.
func dropTokenSources(spec *corev1.PodSpec) {
	for i := range spec.Volumes {
		p := spec.Volumes[i].Projected
		if p == nil || !hasTokenSource(p) {
			continue
		}
		p.Sources = slices.DeleteFunc(p.Sources, func(s corev1.VolumeProjection) bool { return s.ServiceAccountToken != nil })
		for j := range p.Sources {
			if cm := p.Sources[j].ConfigMap; cm != nil {
				cm.Name = remoteConfigMap(cm.Name)
			}
		}
	}
}

// Reasons of the Warning Events and the Ready condition of a pod the provider does not create.
const (
	// ReasonNotCreated: the pod's ShadowPod is on the provider, which does not create its pod
	// (it retries): with liqo.io/api-server-support=remote, typically a service account missing
	// there.
	ReasonNotCreated = "ProviderPodNotCreated"
)

// notCreatedWait is how long after a ShadowPod's creation a missing remote pod is looked into,
// and how often again after.
var notCreatedWait = 10 * time.Second

// reportNotCreated reports, on a local pod that never started, why the provider has not created
// the remote pod of its ShadowPod sp after notCreatedWait: its latest Warning Event about the
// ShadowPod (ours, PodRefused or SecretNotReflected; upstream's, FailedCreatePod), as a Warning
// Event on the pod and its Ready condition False (ReasonNotCreated). The pod stays Pending: the
// provider retries (the service account may be created there), and its pod's watch brings the
// remote status once it runs. Looked at again at each new Warning Event about the ShadowPod
// (watchWarnings), or every notCreatedWait until that watch is synced.
func (rf *reflection) reportNotCreated(ctx context.Context, pod *corev1.Pod, sp *offv1beta1.ShadowPod) error {
	key := pod.Namespace + "/" + pod.Name
	if age := time.Since(sp.CreationTimestamp.Time); age < notCreatedWait {
		rf.queue.AddAfter(key, notCreatedWait-age)
		return nil
	}
	ev, watched, err := rf.latestWarning(ctx, sp)
	if !watched {
		rf.queue.AddAfter(key, notCreatedWait) // no watch brings the next Warning yet
	}
	if err != nil || ev == nil {
		return err
	}
	msg := fmt.Sprintf("provider %s does not create the pod of ShadowPod %s/%s (retrying) (%s): %s",
		rf.env.ProviderID, sp.Namespace, sp.Name, ev.Reason, ev.Message)
	if pod.Annotations[consts.APIServerSupportAnnotation] == consts.APIServerSupportRemote {
		msg += fmt.Sprintf("; with %s=%s, service account %q must exist in namespace %s on the provider",
			consts.APIServerSupportAnnotation, consts.APIServerSupportRemote, sp.Spec.Pod.ServiceAccountName, sp.Namespace)
	}
	st := notReadyFor(&pod.Status, ReasonNotCreated, msg)
	if equality.Semantic.DeepEqual(&pod.Status, st) {
		return nil // reported already
	}
	rf.recorder.Event(pod, corev1.EventTypeWarning, ReasonNotCreated, msg)
	return rf.updateStatus(ctx, pod, st)
}

// notReadyFor returns a copy of status with its Ready condition False for reason, added when
// missing (a pod that never ran may have none).
func notReadyFor(status *corev1.PodStatus, reason, message string) *corev1.PodStatus {
	st := status.DeepCopy()
	i := slices.IndexFunc(st.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady })
	if i < 0 {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: corev1.PodReady})
		i = len(st.Conditions) - 1
	}
	c := &st.Conditions[i]
	if c.Status != corev1.ConditionFalse || c.Reason != reason || c.Message != message {
		c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionFalse, reason, message, metav1.Now()
	}
	return st
}
