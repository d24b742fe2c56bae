// Package gatewayclient reconciles GatewayClients: it generates the key Secret when missing,
// renders the gateway client's Deployment, which connects to the endpoint in the spec, from the
// template spec.clientTemplateRef names (internal/gateway/workload.Load: the template's Deployment with the
// controller's part filled in; the built-in one when the reference is empty; the default
// liqo/wireguard-client is created when missing; any other missing template is a Warning Event
// and nothing is rendered), and reports in status the internal endpoint (the gateway pod's IP and
// node).
package gatewayclient

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/gateways"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/mode"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/workload"
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
	// LiqoNamespace is the namespace Liqo is installed in, where the default templates are
	// ("": consts.LiqoNamespace).
	LiqoNamespace string
}

// clients is how the shared part reads GatewayClients.
var clients = gateways.Kind[*netv1beta1.GatewayClient]{
	Name:          "GatewayClient",
	Mode:          mode.Client,
	TemplateKind:  workload.ClientTemplateKind,
	TemplateField: "spec.clientTemplateRef",
	New:           func() *netv1beta1.GatewayClient { return &netv1beta1.GatewayClient{} },
	NewList:       func() client.ObjectList { return &netv1beta1.GatewayClientList{} },
	NewTemplate:   func() client.Object { return &netv1beta1.WgGatewayClientTemplate{} },
	TemplateRef:   func(gw *netv1beta1.GatewayClient) corev1.ObjectReference { return gw.Spec.ClientTemplateRef },
	SecretRef:     func(gw *netv1beta1.GatewayClient) string { return gw.Spec.SecretRef.Name },
	Spec:          func(gw *netv1beta1.GatewayClient) any { return gw.Spec },
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := clients.Controller(mgr, r.Client).Complete(r); err != nil {
		return fmt.Errorf("setting up the gatewayclient controller: %w", err)
	}
	return nil
}

// Reconcile renders one GatewayClient's Secret and Deployment and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p, err := clients.Prepare(ctx, r.Client, r.Recorder, req, consts.LiqoNamespaceOr(r.LiqoNamespace))
	if err != nil || p == nil {
		return ctrl.Result{}, err
	}
	gw := p.Object
	dep, err := workload.Ensure(ctx, r.Client, workload.Params{Owner: gw, Mode: mode.Client, SecretName: p.SecretName, Image: r.Image, Base: p.Base,
		LiqoNamespace: r.LiqoNamespace})
	if err != nil {
		return ctrl.Result{}, err
	}
	internal, err := workload.InternalEndpoint(ctx, r.Client, gw, mode.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	status := gw.Status.DeepCopy()
	status.InternalEndpoint = internal
	status.ClientRef = gateways.DeploymentRef(dep)
	status.SecretRef = gateways.SecretRef(gw.Namespace, p.SecretName)
	if equality.Semantic.DeepEqual(&gw.Status, status) {
		return ctrl.Result{}, nil
	}
	gw.Status = *status
	return ctrl.Result{}, clients.UpdateStatus(ctx, r.Client, gw)
}
