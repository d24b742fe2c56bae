package podplacement

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// Path is where the webhook is served.
const Path = "/mutate-pod-placement"

// Configuration is the name of the MutatingWebhookConfiguration holding the webhook.
const Configuration = "liqo-pod-placement"

// SystemNamespaces are never shaped, whatever their labels; nor is Liqo's own namespace.
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// Webhook is the registration of the webhook (its client configuration is left to the
// server): pod creation, in namespaces labelled consts.SchedulingEnabledLabel=true except
// the system ones, failurePolicy Fail (see the package documentation).
func Webhook(liqoNS string) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name: "pod-placement.offloading.liqo.io",
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
				Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
		}},
		FailurePolicy: ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:   ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{consts.SchedulingEnabledLabel: "true"},
			MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: append(slices.Clone(SystemNamespaces), liqoNS)}},
		},
		ObjectSelector:          &metav1.LabelSelector{},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To[int32](10),
		AdmissionReviewVersions: []string{"v1"},
		ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
	}
}

// Handler shapes the pods of offloaded namespaces.
type Handler struct {
	// Client reads NamespaceOffloadings (the manager's cached client).
	Client client.Reader
	// Decoder decodes pods.
	Decoder admission.Decoder
}

// Handle shapes one pod on creation; it leaves alone pods already bound to a node and pods
// of namespaces without a live NamespaceOffloading.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("only pod creation is shaped")
	}
	pod := &corev1.Pod{}
	if err := h.Decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding pod %s/%s: %w", req.Namespace, req.Name, err))
	}
	if pod.Spec.NodeName != "" {
		return admission.Allowed("the pod is bound to node " + pod.Spec.NodeName + " already")
	}
	nso := &offv1beta1.NamespaceOffloading{}
	err := h.Client.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: consts.NamespaceOffloadingName}, nso)
	switch {
	case apierrors.IsNotFound(err):
		return admission.Allowed("namespace " + req.Namespace + " has no NamespaceOffloading")
	case err != nil:
		return admission.Errored(http.StatusInternalServerError,
			fmt.Errorf("reading NamespaceOffloading %s/%s to place the pod: %w", req.Namespace, consts.NamespaceOffloadingName, err))
	case nso.DeletionTimestamp != nil:
		return admission.Allowed("the NamespaceOffloading of " + req.Namespace + " is being deleted")
	}
	strategy := nso.Spec.PodOffloadingStrategy
	switch strategy {
	case "", offv1beta1.LocalPodOffloadingStrategyType, offv1beta1.RemotePodOffloadingStrategyType, offv1beta1.LocalAndRemotePodOffloadingStrategyType:
	default:
		return admission.Denied(fmt.Sprintf("NamespaceOffloading %s/%s has podOffloadingStrategy %q: set Local, Remote or LocalAndRemote",
			nso.Namespace, nso.Name, strategy))
	}
	Apply(&pod.Spec, strategy, nso.Spec.ClusterSelector)
	out, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encoding pod %s/%s: %w", req.Namespace, pod.Name, err))
	}
	log.FromContext(ctx).V(1).Info("pod placed", "namespace", req.Namespace, "strategy", strategy)
	return admission.PatchResponseFromRaw(req.Object.Raw, out)
}
