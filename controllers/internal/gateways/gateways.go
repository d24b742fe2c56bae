// Package gateways is the part the GatewayServer and GatewayClient controllers share: reading a
// gateway, its key Secret (generated when missing), the template its workload is rendered from
// (internal/gateway/workload.Load: the built-in one when the reference is empty; the default one is
// created when missing; any other missing template is a Warning Event and nothing is rendered),
// the watches every gateway controller has, and writing the status. A Kind says how to read one
// kind of gateway; each controller renders its own workload with it.
package gateways

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/enqueue"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/mode"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/workload"
)

// Kind says how the shared part handles one kind T of gateway (*GatewayServer or *GatewayClient).
type Kind[T client.Object] struct {
	// Name is the kind's name in messages, e.g. "GatewayServer"; lowercased, it names the
	// controller.
	Name string
	// Mode is the gateway's mode: what its pods run as, and how they are found.
	Mode mode.Mode
	// TemplateKind is the kind of the templates the gateways reference (workload's
	// ServerTemplateKind or ClientTemplateKind), and TemplateField the spec field that
	// references one, in Events and errors, e.g. "spec.serverTemplateRef".
	TemplateKind, TemplateField string
	// New returns an empty T, NewList an empty list of them, and NewTemplate an empty template
	// of TemplateKind.
	New         func() T
	NewList     func() client.ObjectList
	NewTemplate func() client.Object
	// TemplateRef is the gateway's reference to its template, SecretRef the name of the key
	// Secret its spec gives ("" when none), and Spec its spec (rendered into the template).
	TemplateRef func(T) corev1.ObjectReference
	SecretRef   func(T) string
	Spec        func(T) any
}

// SecretName is the key Secret of a gateway named name whose spec names ref: ref, or
// "<name>-keys" when ref is empty.
func SecretName(ref, name string) string {
	if ref != "" {
		return ref
	}
	return name + "-keys"
}

// Controller begins the controller of the kind's gateways: it reconciles them, the Deployments
// and Secrets they own, their gateway pods, and the templates of the kind (requeueing the
// gateways that reference one). The caller adds what else its kind needs and completes it.
func (k Kind[T]) Controller(mgr ctrl.Manager, c client.Client) *builder.Builder {
	return ctrl.NewControllerManagedBy(mgr).
		Named(strings.ToLower(k.Name)).
		For(k.New()).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Secret{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, pod client.Object) []reconcile.Request {
			if name := workload.GatewayOfPod(pod, k.Mode); name != "" {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: pod.GetNamespace(), Name: name}}}
			}
			return nil
		})).
		Watches(k.NewTemplate(), k.usersOfTemplate(c))
}

// Gateway is one gateway to render, with what the shared part prepared for it.
type Gateway[T client.Object] struct {
	// Object is the gateway, as read.
	Object T
	// SecretName is its key Secret, which exists.
	SecretName string
	// Base is the template its workload is rendered from.
	Base *workload.Base
}

// Prepare reads the gateway of req, makes sure its key Secret exists and loads its template
// (see template). It returns nil when there is nothing to render: the gateway is gone, or going
// (the garbage collector removes what it owns, and in a foreground deletion it waits for them,
// so nothing is written again; the binding of its ServiceAccount in the Liqo namespace, which it
// cannot own, is removed here). liqoNS is the namespace Liqo is installed in, where the default
// templates are.
func (k Kind[T]) Prepare(ctx context.Context, c client.Client, rec events.EventRecorder, req ctrl.Request, liqoNS string) (*Gateway[T], error) {
	gw := k.New()
	if err := c.Get(ctx, req.NamespacedName, gw); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, workload.RemoveIPsBinding(ctx, c, liqoNS, req.Namespace, req.Name)
		}
		return nil, fmt.Errorf("reading %s %s: %w", k.Name, req.NamespacedName, err)
	}
	if gw.GetDeletionTimestamp() != nil {
		return nil, workload.RemoveIPsBinding(ctx, c, liqoNS, req.Namespace, req.Name)
	}
	secretName := SecretName(k.SecretRef(gw), gw.GetName())
	if err := workload.EnsureKeySecret(ctx, c, gw, secretName); err != nil {
		return nil, err
	}
	base, err := k.template(ctx, c, rec, gw, secretName, liqoNS)
	if err != nil {
		return nil, err
	}
	return &Gateway[T]{Object: gw, SecretName: secretName, Base: base}, nil
}

// UpdateStatus writes the status the caller set on gw.
func (k Kind[T]) UpdateStatus(ctx context.Context, c client.Client, gw T) error {
	if err := c.Status().Update(ctx, gw); err != nil {
		return fmt.Errorf("updating status of %s %s: %w", k.Name, client.ObjectKeyFromObject(gw), err)
	}
	return nil
}

// DeploymentRef is a gateway status's reference to its Deployment.
func DeploymentRef(dep *appsv1.Deployment) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: dep.Namespace, Name: dep.Name, UID: dep.UID}
}

// SecretRef is a gateway status's reference to its key Secret name in namespace.
func SecretRef(namespace, name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: namespace, Name: name}
}

// template loads the gateway's template (see workload.Load), creating the default one when it is
// the one referenced and it is missing. A missing template is recorded as a Warning Event on the
// gateway (when rec is not nil) and returned as an error (retried with backoff, and at once when
// a template of the kind appears); nothing is rendered meanwhile.
func (k Kind[T]) template(ctx context.Context, c client.Client, rec events.EventRecorder, gw T, secretName, liqoNS string) (*workload.Base, error) {
	ref := k.TemplateRef(gw)
	data := workload.TemplateData{Name: gw.GetName(), Namespace: gw.GetNamespace(), GatewayUID: string(gw.GetUID()),
		ClusterID: gw.GetLabels()[consts.RemoteClusterIDLabel], SecretName: secretName, Spec: k.Spec(gw)}
	base, err := workload.Load(ctx, c, ref, gw.GetNamespace(), data)
	if errors.Is(err, workload.ErrTemplateNotFound) && workload.DefaultTemplateRef(ref, liqoNS) {
		if err := workload.EnsureDefaultTemplate(ctx, c, ref); err != nil {
			return nil, err
		}
		base, err = workload.Load(ctx, c, ref, gw.GetNamespace(), data)
	}
	if err != nil {
		reason := "TemplateInvalid"
		if errors.Is(err, workload.ErrTemplateNotFound) {
			reason = "TemplateNotFound"
		}
		if rec != nil {
			rec.Eventf(gw, nil, corev1.EventTypeWarning, reason, "Render", "%s: %v", k.TemplateField, err)
		}
		return nil, fmt.Errorf("%s %s/%s, %s: %w", k.Name, gw.GetNamespace(), gw.GetName(), k.TemplateField, err)
	}
	return base, nil
}

// usersOfTemplate requeues the gateways whose template reference names the template.
func (k Kind[T]) usersOfTemplate(c client.Client) handler.EventHandler {
	return enqueue.Listed(c, k.NewList, nil, func(tmpl client.Object, g T) bool {
		ref := k.TemplateRef(g)
		ns := ref.Namespace
		if ns == "" {
			ns = g.GetNamespace()
		}
		return ref.Kind == k.TemplateKind && ref.Name == tmpl.GetName() && ns == tmpl.GetNamespace()
	})
}
