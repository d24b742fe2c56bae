// Package gatewayserver reconciles GatewayServers: it generates the key Secret when missing,
// renders the gateway's Deployment and the Service of the requested type that exposes it from
// the template spec.serverTemplateRef names (internal/gateway/workload.Load: the template's Deployment and
// Service with the controller's part filled in; the built-in one when the reference is empty; the
// default liqo/wireguard-server is created when missing; any other missing template is a Warning
// Event and nothing is rendered), and reports in status the endpoint (addresses, port, protocol)
// the remote client connects to and the internal endpoint (the gateway pod's IP and node).
package gatewayserver

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/enqueue"
	"github.com/peerkit/terraform-provider-liqo/controllers/internal/gateways"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/mode"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/workload"
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
	// LiqoNamespace is the namespace Liqo is installed in, where the default templates are
	// ("": consts.LiqoNamespace).
	LiqoNamespace string
}

// servers is how the shared part reads GatewayServers.
var servers = gateways.Kind[*netv1beta1.GatewayServer]{
	Name:          "GatewayServer",
	Mode:          mode.Server,
	TemplateKind:  workload.ServerTemplateKind,
	TemplateField: "spec.serverTemplateRef",
	New:           func() *netv1beta1.GatewayServer { return &netv1beta1.GatewayServer{} },
	NewList:       func() client.ObjectList { return &netv1beta1.GatewayServerList{} },
	NewTemplate:   func() client.Object { return &netv1beta1.WgGatewayServerTemplate{} },
	TemplateRef:   func(gw *netv1beta1.GatewayServer) corev1.ObjectReference { return gw.Spec.ServerTemplateRef },
	SecretRef:     func(gw *netv1beta1.GatewayServer) string { return gw.Spec.SecretRef.Name },
	Spec:          func(gw *netv1beta1.GatewayServer) any { return gw.Spec },
}

// SetupWithManager registers the reconciler. Node changes requeue every GatewayServer, as a
// NodePort endpoint lists the nodes' addresses; a GatewayServer's changes requeue the others
// on its port and those whose port was taken (portConflict), as its port may be free now.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	nodePortServers := enqueue.Listed(r.Client, servers.NewList, nil, func(_ client.Object, g *netv1beta1.GatewayServer) bool {
		return g.Spec.Endpoint.ServiceType == corev1.ServiceTypeNodePort
	})
	samePort := enqueue.Listed(r.Client, servers.NewList, nil, func(o client.Object, g *netv1beta1.GatewayServer) bool {
		changed, ok := o.(*netv1beta1.GatewayServer)
		if !ok || client.ObjectKeyFromObject(changed) == client.ObjectKeyFromObject(g) {
			return false
		}
		_, taken := g.Annotations[consts.PortConflictAnnotation]
		return taken || workload.ListenPort(g) == workload.ListenPort(changed)
	})
	err := servers.Controller(mgr, r.Client).
		Owns(&corev1.Service{}).
		Watches(&corev1.Node{}, nodePortServers).
		Watches(&netv1beta1.GatewayServer{}, samePort).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the gatewayserver controller: %w", err)
	}
	return nil
}

// Reconcile renders one GatewayServer's Secret, Deployment and Service and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p, err := servers.Prepare(ctx, r.Client, r.Recorder, req, consts.LiqoNamespaceOr(r.LiqoNamespace))
	if err != nil || p == nil {
		return ctrl.Result{}, err
	}
	gw := p.Object
	port := workload.ListenPort(gw)
	conflict, err := r.portConflict(ctx, gw, port)
	if err != nil {
		return ctrl.Result{}, err
	}
	dep, err := workload.Ensure(ctx, r.Client, workload.Params{Owner: gw, Mode: mode.Server, SecretName: p.SecretName, Image: r.Image, Port: port, Base: p.Base,
		LiqoNamespace: r.LiqoNamespace, Stopped: conflict})
	if err != nil {
		return ctrl.Result{}, err
	}
	svc, err := r.ensureService(ctx, gw, port, p.Base)
	if err != nil {
		return ctrl.Result{}, err
	}
	endpoint, err := r.endpoint(ctx, svc)
	if err != nil {
		return ctrl.Result{}, err
	}
	internal, err := workload.InternalEndpoint(ctx, r.Client, gw, mode.Server)
	if err != nil {
		return ctrl.Result{}, err
	}
	status := netv1beta1.GatewayServerStatus{
		ServerRef:        gateways.DeploymentRef(dep),
		Endpoint:         endpoint,
		InternalEndpoint: internal,
		SecretRef:        gateways.SecretRef(gw.Namespace, p.SecretName),
	}
	if equality.Semantic.DeepEqual(gw.Status, status) {
		return ctrl.Result{}, nil
	}
	gw.Status = status
	return ctrl.Result{}, servers.UpdateStatus(ctx, r.Client, gw)
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
		spec.Selector = workload.Selector(gw, mode.Server)
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
