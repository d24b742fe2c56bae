// Package gatewayclient reconciles GatewayClients: it generates the key Secret when missing and
// renders the gateway client's Deployment, which connects to the endpoint in the spec.
package gatewayclient

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/gateway/agent"
	"github.com/peerkit/terraform-provider-liqo/gateway/workload"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// Reconciler makes GatewayClients real.
type Reconciler struct {
	// Client reads and writes the objects.
	Client client.Client
	// Image is the gateway image; empty: workload.DefaultImage.
	Image string
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).
		Named("gatewayclient").
		For(&netv1beta1.GatewayClient{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Secret{}).
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
	secretName := SecretName(gw)
	if err := workload.EnsureKeySecret(ctx, r.Client, gw, secretName); err != nil {
		return ctrl.Result{}, err
	}
	dep, err := workload.Ensure(ctx, r.Client, workload.Params{Owner: gw, Mode: agent.ModeClient, SecretName: secretName, Image: r.Image})
	if err != nil {
		return ctrl.Result{}, err
	}
	status := gw.Status.DeepCopy()
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
