// Package gatewayserver reconciles GatewayServers: it generates the key Secret when missing,
// renders the gateway's Deployment and the Service of the requested type that exposes it, and
// reports the endpoint (addresses, port, protocol) the remote client connects to in status.
package gatewayserver

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/gateway/agent"
	"github.com/peerkit/terraform-provider-liqo/gateway/workload"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// Reconciler makes GatewayServers real.
type Reconciler struct {
	// Client reads and writes the objects.
	Client client.Client
	// Image is the gateway image; empty: workload.DefaultImage.
	Image string
}

// SetupWithManager registers the reconciler. Node changes requeue every GatewayServer, as a
// NodePort endpoint lists the nodes' addresses.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	allServers := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		list := &netv1beta1.GatewayServerList{}
		if err := r.Client.List(ctx, list); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, g := range list.Items {
			if g.Spec.Endpoint.ServiceType == corev1.ServiceTypeNodePort {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&g)})
			}
		}
		return reqs
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named("gatewayserver").
		For(&netv1beta1.GatewayServer{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.Secret{}).
		Watches(&corev1.Node{}, allServers).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the gatewayserver controller: %w", err)
	}
	return nil
}

// SecretName is the key Secret of gw: the one its spec names, or "<name>-keys".
func SecretName(gw *netv1beta1.GatewayServer) string {
	if gw.Spec.SecretRef.Name != "" {
		return gw.Spec.SecretRef.Name
	}
	return gw.Name + "-keys"
}

// Reconcile renders one GatewayServer's Secret, Deployment and Service and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gw := &netv1beta1.GatewayServer{}
	if err := r.Client.Get(ctx, req.NamespacedName, gw); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading GatewayServer %s: %w", req.NamespacedName, err)
	}
	secretName := SecretName(gw)
	if err := workload.EnsureKeySecret(ctx, r.Client, gw, secretName); err != nil {
		return ctrl.Result{}, err
	}
	port := gw.Spec.Endpoint.Port
	if port == 0 && len(gw.Spec.Endpoint.Ports) > 0 {
		port = gw.Spec.Endpoint.Ports[0]
	}
	if port == 0 {
		port = agent.DefaultPort
	}
	dep, err := workload.Ensure(ctx, r.Client, workload.Params{Owner: gw, Mode: agent.ModeServer, SecretName: secretName, Image: r.Image, Port: port})
	if err != nil {
		return ctrl.Result{}, err
	}
	svc, err := r.ensureService(ctx, gw, port)
	if err != nil {
		return ctrl.Result{}, err
	}
	endpoint, err := r.endpoint(ctx, svc)
	if err != nil {
		return ctrl.Result{}, err
	}
	status := netv1beta1.GatewayServerStatus{
		ServerRef: &corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: dep.Namespace, Name: dep.Name, UID: dep.UID},
		Endpoint:  endpoint,
		SecretRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: gw.Namespace, Name: secretName},
	}
	if equality.Semantic.DeepEqual(gw.Status, status) {
		return ctrl.Result{}, nil
	}
	gw.Status = status
	if err := r.Client.Status().Update(ctx, gw); err != nil {
		return ctrl.Result{}, fmt.Errorf("updating status of GatewayServer %s: %w", req.NamespacedName, err)
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) ensureService(ctx context.Context, gw *netv1beta1.GatewayServer, port int32) (*corev1.Service, error) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: gw.Namespace, Name: workload.Name(gw)}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, svc, func() error {
		typ := gw.Spec.Endpoint.ServiceType
		if typ == "" {
			typ = corev1.ServiceTypeClusterIP
		}
		svc.Spec.Type = typ
		svc.Spec.Selector = workload.Selector(gw, agent.ModeServer)
		if svc.Labels == nil {
			svc.Labels = map[string]string{}
		}
		for k, v := range gw.Spec.ServiceLabels {
			svc.Labels[k] = v
		}
		if len(gw.Spec.ServiceAnnotations) > 0 && svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		for k, v := range gw.Spec.ServiceAnnotations {
			svc.Annotations[k] = v
		}
		sp := corev1.ServicePort{Name: "wireguard", Protocol: corev1.ProtocolUDP, Port: port, TargetPort: intstr.FromInt32(port)}
		if len(svc.Spec.Ports) == 1 && typ != corev1.ServiceTypeClusterIP {
			sp.NodePort = svc.Spec.Ports[0].NodePort // keep the allocated one
		}
		if typ == corev1.ServiceTypeNodePort || typ == corev1.ServiceTypeLoadBalancer {
			if gw.Spec.Endpoint.NodePort != nil {
				sp.NodePort = *gw.Spec.Endpoint.NodePort
			} else if len(gw.Spec.Endpoint.NodePorts) > 0 {
				sp.NodePort = gw.Spec.Endpoint.NodePorts[0]
			}
		}
		svc.Spec.Ports = []corev1.ServicePort{sp}
		if typ == corev1.ServiceTypeLoadBalancer && gw.Spec.Endpoint.LoadBalancerIP != nil {
			svc.Spec.LoadBalancerIP = *gw.Spec.Endpoint.LoadBalancerIP
		}
		return controllerutil.SetControllerReference(gw, svc, r.Client.Scheme())
	})
	if err != nil {
		return nil, fmt.Errorf("writing Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return svc, nil
}

// endpoint is where the remote client reaches the server, from the Service; nil while a
// LoadBalancer has no ingress yet.
func (r *Reconciler) endpoint(ctx context.Context, svc *corev1.Service) (*netv1beta1.EndpointStatus, error) {
	udp := corev1.ProtocolUDP
	ep := &netv1beta1.EndpointStatus{Protocol: &udp, Port: svc.Spec.Ports[0].Port}
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		ep.Port = svc.Spec.Ports[0].NodePort
		nodes := &corev1.NodeList{}
		if err := r.Client.List(ctx, nodes); err != nil {
			return nil, fmt.Errorf("listing nodes: %w", err)
		}
		for _, n := range nodes.Items {
			ep.Addresses = append(ep.Addresses, nodeAddress(&n)...)
		}
		slices.Sort(ep.Addresses)
		ep.Addresses = slices.Compact(ep.Addresses)
	case corev1.ServiceTypeLoadBalancer:
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ep.Addresses = append(ep.Addresses, in.IP)
			} else if in.Hostname != "" {
				ep.Addresses = append(ep.Addresses, in.Hostname)
			}
		}
	default:
		if svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
			ep.Addresses = []string{svc.Spec.ClusterIP}
		}
	}
	if len(ep.Addresses) == 0 || ep.Port == 0 {
		return nil, nil
	}
	return ep, nil
}

// nodeAddress returns a node's external addresses, or its internal ones when it has none.
func nodeAddress(n *corev1.Node) []string {
	var ext, in []string
	for _, a := range n.Status.Addresses {
		switch a.Type {
		case corev1.NodeExternalIP:
			ext = append(ext, a.Address)
		case corev1.NodeInternalIP:
			in = append(in, a.Address)
		}
	}
	if len(ext) > 0 {
		return ext
	}
	return in
}
