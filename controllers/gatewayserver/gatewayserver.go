// Package gatewayserver reconciles GatewayServers: it generates the key Secret when missing,
// renders the gateway's Deployment and the Service of the requested type that exposes it from
// the template spec.serverTemplateRef names (gateway/workload.Load: the template's Deployment and
// Service with the controller's part filled in; the built-in one when the reference is empty; the
// default liqo/wireguard-server is created when missing; any other missing template is a Warning
// Event and nothing is rendered), and reports in status the endpoint (addresses, port, protocol)
// the remote client connects to and the internal endpoint (the gateway pod's IP and node).
package gatewayserver

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/gateway/agent"
	"github.com/peerkit/terraform-provider-liqo/gateway/workload"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// Reconciler makes GatewayServers real.
type Reconciler struct {
	// Client reads and writes the objects.
	Client client.Client
	// Image is the gateway image; empty: workload.DefaultImage.
	Image string
	// Recorder records why a GatewayServer cannot be rendered (e.g. a missing template), as
	// Events on it; nil: none.
	Recorder events.EventRecorder
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
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, pod client.Object) []reconcile.Request {
			if name := workload.GatewayOfPod(pod, agent.ModeServer); name != "" {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: pod.GetNamespace(), Name: name}}}
			}
			return nil
		})).
		Watches(&netv1beta1.WgGatewayServerTemplate{}, handler.EnqueueRequestsFromMapFunc(r.usersOfTemplate)).
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
	port := gw.Spec.Endpoint.Port
	if port == 0 && len(gw.Spec.Endpoint.Ports) > 0 {
		port = gw.Spec.Endpoint.Ports[0]
	}
	if port == 0 {
		port = consts.DefaultGatewayPort
	}
	dep, err := workload.Ensure(ctx, r.Client, workload.Params{Owner: gw, Mode: agent.ModeServer, SecretName: secretName, Image: r.Image, Port: port, Base: base})
	if err != nil {
		return ctrl.Result{}, err
	}
	svc, err := r.ensureService(ctx, gw, port, base)
	if err != nil {
		return ctrl.Result{}, err
	}
	endpoint, err := r.endpoint(ctx, svc)
	if err != nil {
		return ctrl.Result{}, err
	}
	internal, err := workload.InternalEndpoint(ctx, r.Client, gw, agent.ModeServer)
	if err != nil {
		return ctrl.Result{}, err
	}
	status := netv1beta1.GatewayServerStatus{
		ServerRef:        &corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: dep.Namespace, Name: dep.Name, UID: dep.UID},
		Endpoint:         endpoint,
		InternalEndpoint: internal,
		SecretRef:        &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: gw.Namespace, Name: secretName},
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

// ensureService renders the Service from the template's (base) with the controller's part
// filled in: the type (the GatewayServer's, else the template's, else ClusterIP), the selector,
// the WireGuard port (named workload.PortName; the template's other ports are kept), and the
// GatewayServer's service labels and annotations over the template's.
func (r *Reconciler) ensureService(ctx context.Context, gw *netv1beta1.GatewayServer, port int32, base *workload.Base) (*corev1.Service, error) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: gw.Namespace, Name: workload.Name(gw)}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, svc, func() error {
		spec := *base.Service.DeepCopy()
		typ := gw.Spec.Endpoint.ServiceType
		if typ == "" {
			typ = spec.Type
		}
		if typ == "" {
			typ = corev1.ServiceTypeClusterIP
		}
		spec.Type = typ
		spec.Selector = workload.Selector(gw, agent.ModeServer)
		// What the API server allocated stays: the cluster IP cannot change, node ports should not.
		spec.ClusterIP, spec.ClusterIPs = svc.Spec.ClusterIP, svc.Spec.ClusterIPs
		if spec.IPFamilies == nil {
			spec.IPFamilies = svc.Spec.IPFamilies
		}
		if spec.IPFamilyPolicy == nil {
			spec.IPFamilyPolicy = svc.Spec.IPFamilyPolicy
		}
		if spec.InternalTrafficPolicy == nil {
			spec.InternalTrafficPolicy = svc.Spec.InternalTrafficPolicy
		}
		if spec.SessionAffinity == "" {
			spec.SessionAffinity = svc.Spec.SessionAffinity
		}
		if typ != corev1.ServiceTypeClusterIP && spec.ExternalTrafficPolicy == "" {
			spec.ExternalTrafficPolicy = svc.Spec.ExternalTrafficPolicy
		}
		sp := corev1.ServicePort{Name: workload.PortName, Protocol: corev1.ProtocolUDP, Port: port, TargetPort: intstr.FromInt32(port)}
		if typ != corev1.ServiceTypeClusterIP {
			for _, old := range svc.Spec.Ports {
				if old.Name == workload.PortName {
					sp.NodePort = old.NodePort // keep the allocated one
				}
			}
		}
		if typ == corev1.ServiceTypeNodePort || typ == corev1.ServiceTypeLoadBalancer {
			if gw.Spec.Endpoint.NodePort != nil {
				sp.NodePort = *gw.Spec.Endpoint.NodePort
			} else if len(gw.Spec.Endpoint.NodePorts) > 0 {
				sp.NodePort = gw.Spec.Endpoint.NodePorts[0]
			}
		}
		spec.Ports = slices.DeleteFunc(spec.Ports, func(p corev1.ServicePort) bool { return p.Name == workload.PortName || p.Port == port })
		for i := range spec.Ports {
			if typ != corev1.ServiceTypeClusterIP {
				for _, old := range svc.Spec.Ports {
					if old.Name == spec.Ports[i].Name && spec.Ports[i].NodePort == 0 {
						spec.Ports[i].NodePort = old.NodePort
					}
				}
			}
			if spec.Ports[i].Protocol == "" {
				spec.Ports[i].Protocol = corev1.ProtocolTCP
			}
			if spec.Ports[i].TargetPort.IntVal == 0 && spec.Ports[i].TargetPort.StrVal == "" {
				spec.Ports[i].TargetPort = intstr.FromInt32(spec.Ports[i].Port)
			}
		}
		spec.Ports = append([]corev1.ServicePort{sp}, spec.Ports...)
		if typ == corev1.ServiceTypeLoadBalancer && gw.Spec.Endpoint.LoadBalancerIP != nil {
			spec.LoadBalancerIP = *gw.Spec.Endpoint.LoadBalancerIP
		}
		svc.Spec = spec
		svc.Labels = workload.Merge(svc.Labels, workload.Merge(base.ServiceMeta.Labels, gw.Spec.ServiceLabels))
		svc.Annotations = workload.Merge(svc.Annotations, workload.Merge(base.ServiceMeta.Annotations, gw.Spec.ServiceAnnotations))
		return controllerutil.SetControllerReference(gw, svc, r.Client.Scheme())
	})
	if err != nil {
		return nil, fmt.Errorf("writing Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return svc, nil
}

// template loads the GatewayServer's template (spec.serverTemplateRef; see workload.Load),
// creating the default one when it is the one referenced and it is missing. A missing template
// is recorded as a Warning Event on the GatewayServer and returned as an error (retried with
// backoff, and at once when a WgGatewayServerTemplate appears); nothing is rendered meanwhile.
func (r *Reconciler) template(ctx context.Context, gw *netv1beta1.GatewayServer, secretName string) (*workload.Base, error) {
	ref := gw.Spec.ServerTemplateRef
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
			r.Recorder.Eventf(gw, nil, corev1.EventTypeWarning, reason, "Render", "spec.serverTemplateRef: %v", err)
		}
		return nil, fmt.Errorf("GatewayServer %s/%s, spec.serverTemplateRef: %w", gw.Namespace, gw.Name, err)
	}
	return base, nil
}

// usersOfTemplate requeues the GatewayServers whose spec.serverTemplateRef names tmpl.
func (r *Reconciler) usersOfTemplate(ctx context.Context, tmpl client.Object) []reconcile.Request {
	list := &netv1beta1.GatewayServerList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, g := range list.Items {
		ref := g.Spec.ServerTemplateRef
		ns := ref.Namespace
		if ns == "" {
			ns = g.Namespace
		}
		if ref.Kind == workload.ServerTemplateKind && ref.Name == tmpl.GetName() && ns == tmpl.GetNamespace() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&g)})
		}
	}
	return reqs
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
