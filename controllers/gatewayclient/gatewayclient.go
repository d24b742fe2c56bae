// Package gatewayclient reconciles GatewayClients: it generates the key Secret when missing,
// renders the gateway client's Deployment, which connects to the endpoint in the spec, from the
// template spec.clientTemplateRef names (gateway/workload.Load: the template's Deployment with the
// controller's part filled in; the built-in one when the reference is empty; the default
// liqo/wireguard-client is created when missing; any other missing template is a Warning Event
// and nothing is rendered), and reports in status the internal endpoint (the gateway pod's IP and
// node).
package gatewayclient

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/gateway/agent"
	"github.com/peerkit/terraform-provider-liqo/gateway/workload"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// Reconciler makes GatewayClients real.
type Reconciler struct {
	// Client reads and writes the objects.
	Client client.Client
	// Image is the gateway image; empty: workload.DefaultImage.
	Image string
	// Recorder records why a GatewayClient cannot be rendered (e.g. a missing template), as
	// Events on it; nil: none.
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).
		Named("gatewayclient").
		For(&netv1beta1.GatewayClient{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Secret{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, pod client.Object) []reconcile.Request {
			if name := workload.GatewayOfPod(pod, agent.ModeClient); name != "" {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: pod.GetNamespace(), Name: name}}}
			}
			return nil
		})).
		Watches(&netv1beta1.WgGatewayClientTemplate{}, handler.EnqueueRequestsFromMapFunc(r.usersOfTemplate)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the gatewayclient controller: %w", err)
	}
	return nil
}

// SecretName is the key Secret of gw: the one its spec names, or "<name>-keys".
func SecretName(gw *netv1beta1.GatewayClient) string {
	if gw.Spec.SecretRef.Name != "" {
		return gw.Spec.SecretRef.Name
	}
	return gw.Name + "-keys"
}

// Reconcile renders one GatewayClient's Secret and Deployment and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gw := &netv1beta1.GatewayClient{}
	if err := r.Client.Get(ctx, req.NamespacedName, gw); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading GatewayClient %s: %w", req.NamespacedName, err)
	}
	if gw.DeletionTimestamp != nil {
		// Going: the garbage collector removes what it owns (in a foreground deletion it waits
		// for them), so nothing is written again.
		return ctrl.Result{}, nil
	}
	secretName := SecretName(gw)
	if err := workload.EnsureKeySecret(ctx, r.Client, gw, secretName); err != nil {
		return ctrl.Result{}, err
	}
	base, err := r.template(ctx, gw, secretName)
	if err != nil {
		return ctrl.Result{}, err
	}
	dep, err := workload.Ensure(ctx, r.Client, workload.Params{Owner: gw, Mode: agent.ModeClient, SecretName: secretName, Image: r.Image, Base: base})
	if err != nil {
		return ctrl.Result{}, err
	}
	internal, err := workload.InternalEndpoint(ctx, r.Client, gw, agent.ModeClient)
	if err != nil {
		return ctrl.Result{}, err
	}
	status := gw.Status.DeepCopy()
	status.InternalEndpoint = internal
	status.ClientRef = &corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: dep.Namespace, Name: dep.Name, UID: dep.UID}
	status.SecretRef = &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: gw.Namespace, Name: secretName}
	if equality.Semantic.DeepEqual(&gw.Status, status) {
		return ctrl.Result{}, nil
	}
	gw.Status = *status
	if err := r.Client.Status().Update(ctx, gw); err != nil {
		return ctrl.Result{}, fmt.Errorf("updating status of GatewayClient %s: %w", req.NamespacedName, err)
	}
	return ctrl.Result{}, nil
}

// template loads the GatewayClient's template (spec.clientTemplateRef; see workload.Load),
// creating the default one when it is the one referenced and it is missing. A missing template
// is recorded as a Warning Event on the GatewayClient and returned as an error (retried with
// backoff, and at once when a WgGatewayClientTemplate appears); nothing is rendered meanwhile.
func (r *Reconciler) template(ctx context.Context, gw *netv1beta1.GatewayClient, secretName string) (*workload.Base, error) {
	ref := gw.Spec.ClientTemplateRef
	data := workload.TemplateData{Name: gw.Name, Namespace: gw.Namespace, GatewayUID: string(gw.UID),
		ClusterID: gw.Labels[consts.RemoteClusterIDLabel], SecretName: secretName, Spec: gw.Spec}
	base, err := workload.Load(ctx, r.Client, ref, gw.Namespace, data)
	if errors.Is(err, workload.ErrTemplateNotFound) && workload.DefaultTemplateRef(ref) {
		if err := workload.EnsureDefaultTemplate(ctx, r.Client, ref); err != nil {
			return nil, err
		}
		base, err = workload.Load(ctx, r.Client, ref, gw.Namespace, data)
	}
	if err != nil {
		reason := "TemplateInvalid"
		if errors.Is(err, workload.ErrTemplateNotFound) {
			reason = "TemplateNotFound"
		}
		if r.Recorder != nil {
			r.Recorder.Eventf(gw, nil, corev1.EventTypeWarning, reason, "Render", "spec.clientTemplateRef: %v", err)
		}
		return nil, fmt.Errorf("GatewayClient %s/%s, spec.clientTemplateRef: %w", gw.Namespace, gw.Name, err)
	}
	return base, nil
}

// usersOfTemplate requeues the GatewayClients whose spec.clientTemplateRef names tmpl.
func (r *Reconciler) usersOfTemplate(ctx context.Context, tmpl client.Object) []reconcile.Request {
	list := &netv1beta1.GatewayClientList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, g := range list.Items {
		ref := g.Spec.ClientTemplateRef
		ns := ref.Namespace
		if ns == "" {
			ns = g.Namespace
		}
		if ref.Kind == workload.ClientTemplateKind && ref.Name == tmpl.GetName() && ns == tmpl.GetNamespace() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&g)})
		}
	}
	return reqs
}
