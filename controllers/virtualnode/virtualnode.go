package virtualnode

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/finalizers"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/vnode"
)

// finalizer removes the Node before the VirtualNode goes.
const finalizer = "liqo.io/virtual-node"

// Reconciler runs the Node of every VirtualNode with createNode set.
type Reconciler struct {
	// Client reads and writes the consumer cluster.
	Client client.Client
	// Runner hosts the virtual nodes.
	Runner *vnode.Runner
	// APIReader lists the pods of a node being drained (a field selector on spec.nodeName);
	// Client when nil, which then needs a spec.nodeName index.
	APIReader client.Reader
	// DrainGrace is how long after a pod's deletion deadline a drain removes the pod itself
	// when the virtual kubelet did not (default 30s).
	DrainGrace time.Duration
	// Deployments, when set, runs each virtual kubelet as a Deployment (cmd/liqo-virtual-kubelet)
	// instead of in Runner (deployment.go).
	Deployments *Deployments
}

// Reconcile starts, updates or stops one virtual node.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	vn := &offv1beta1.VirtualNode{}
	if err := r.Client.Get(ctx, req.NamespacedName, vn); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if vn.DeletionTimestamp != nil || vn.Spec.CreateNode != nil && !*vn.Spec.CreateNode {
		// Drain first: the pods' remote copies go while the virtual kubelet still runs.
		drained, again, err := r.drain(ctx, vn.Name)
		if err != nil || !drained {
			return reconcile.Result{RequeueAfter: again}, err
		}
		if stopped, err := r.stopKubelet(ctx, vn); err != nil || !stopped {
			return reconcile.Result{RequeueAfter: time.Second}, err
		}
		return reconcile.Result{}, finalizers.Remove(ctx, r.Client, vn, finalizer, "virtual node")
	}
	if err := finalizers.Add(ctx, r.Client, vn, finalizer, "virtual node"); err != nil {
		return reconcile.Result{}, err
	}
	if vn.Spec.KubeconfigSecretRef == nil {
		return reconcile.Result{}, r.setStatus(ctx, vn, offv1beta1.NoneConditionStatusType, "no kubeconfigSecretRef")
	}
	if r.Deployments != nil {
		return r.runDeployment(ctx, vn)
	}
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: vn.Namespace, Name: vn.Spec.KubeconfigSecretRef.Name}, secret); err != nil {
		return reconcile.Result{}, fmt.Errorf("reading the kubeconfig of virtual node %s: %w", req, err)
	}
	remote, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[consts.KubeconfigSecretKey])
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("kubeconfig %s of virtual node %s: %w", secret.Name, req, err)
	}
	// The reconcile context is the controller's: the node runs until the manager stops.
	if err := r.Runner.Ensure(ctx, vn, remote); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.setStatus(ctx, vn, offv1beta1.RunningConditionStatusType, "running in the controller manager")
}

func (r *Reconciler) setStatus(ctx context.Context, vn *offv1beta1.VirtualNode, s offv1beta1.VirtualNodeConditionStatusType, msg string) error {
	before := vn.DeepCopy()
	now := metav1.Now()
	vn.Status.Conditions = nil
	for _, t := range []offv1beta1.VirtualNodeConditionType{offv1beta1.VirtualKubeletConditionType, offv1beta1.NodeConditionType} {
		c := offv1beta1.VirtualNodeCondition{Type: t, Status: s, Message: msg, LastTransitionTime: now}
		for _, o := range before.Status.Conditions {
			if o.Type == t && o.Status == s {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		vn.Status.Conditions = append(vn.Status.Conditions, c)
	}
	if err := r.Client.Status().Patch(ctx, vn, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("updating status of virtual node %s/%s: %w", vn.Namespace, vn.Name, err)
	}
	return nil
}

// SetupWithManager watches VirtualNodes, the kubeconfig Secrets they name (a renewed
// certificate restarts an in-process node with it; a Deployment's virtual kubelet reads its
// Secret again itself) and, with the Deployment runner, their Deployments.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).Named("virtualnode").
		For(&offv1beta1.VirtualNode{})
	if r.Deployments == nil {
		b = b.Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.namingSecret))
	}
	if r.Deployments != nil {
		b = b.Owns(&appsv1.Deployment{})
	}
	err := b.Complete(r)
	if err != nil {
		return fmt.Errorf("building the virtual-node controller: %w", err)
	}
	return nil
}

// namingSecret are the VirtualNodes whose kubeconfigSecretRef names the Secret o.
func (r *Reconciler) namingSecret(ctx context.Context, o client.Object) []reconcile.Request {
	vns := &offv1beta1.VirtualNodeList{}
	if err := r.Client.List(ctx, vns, client.InNamespace(o.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "listing the virtual nodes that may run with a changed Secret", "secret", client.ObjectKeyFromObject(o))
		return nil
	}
	var out []reconcile.Request
	for _, vn := range vns.Items {
		if vn.Spec.KubeconfigSecretRef != nil && vn.Spec.KubeconfigSecretRef.Name == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&vn)})
		}
	}
	return out
}
