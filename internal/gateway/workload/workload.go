// Package workload renders what runs a gateway in a cluster, for the GatewayServer and
// GatewayClient controllers: the key Secret (generated when missing), the ServiceAccount and
// Role the gateway reads its objects with (and, in the Liqo namespace, its binding to the Role
// that reads the IPs it exposes), and the Deployment of cmd/liqo-gateway (NET_ADMIN,
// /dev/net/tun).
package workload

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/mode"
	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

// DefaultImage is the gateway image when the controller names none: the one `make images`
// builds for this version.
const DefaultImage = version.GatewayImage

// Params describe one gateway's workload.
type Params struct {
	// Owner is the GatewayServer or GatewayClient; everything rendered is owned by it.
	Owner client.Object
	// Mode is server or client.
	Mode mode.Mode
	// SecretName is the key Secret.
	SecretName string
	// Image is the gateway image; empty: DefaultImage.
	Image string
	// Port is the UDP port the server listens on (server only).
	Port int32
	// Base is the template the Deployment starts from (Load); nil: the built-in one.
	Base *Base
	// LiqoNamespace is the namespace Liqo is installed in, whose IPs the gateway reads (the
	// IPsRole there, bound to the gateway's ServiceAccount); empty: consts.LiqoNamespace.
	LiqoNamespace string
	// Stopped runs no replica: the gateway cannot run (its port is taken, PortKeeper).
	Stopped bool
}

// IPsRole is the Role, in the Liqo namespace, that lets gateways read its ipam.liqo.io IPs (the
// local addresses they expose to their peers): get, list and watch of ips, and nothing else.
// Each gateway's ServiceAccount is bound to it by a RoleBinding of its own there
// (IPsBindingName).
const IPsRole = "liqo-gateway-ips"

// IPsBindingName is the name of the RoleBinding, in the Liqo namespace, of the gateway owner's
// ServiceAccount to IPsRole: "<tenant namespace>.<Name(owner)>" (a namespace name holds no dot,
// so no two gateways share one).
func IPsBindingName(owner client.Object) string { return owner.GetNamespace() + "." + Name(owner) }

// ipsRules are IPsRole's rules.
var ipsRules = []rbacv1.PolicyRule{{APIGroups: []string{ipamv1alpha1.GroupVersion.Group}, Resources: []string{"ips"}, Verbs: []string{"get", "list", "watch"}}}

// Name is the name of the Deployment, ServiceAccount, Role and RoleBinding of a gateway.
func Name(owner client.Object) string { return "gw-" + owner.GetName() }

// Selector is the pod labels of a gateway.
func Selector(owner client.Object, mode mode.Mode) map[string]string {
	return map[string]string{consts.AppComponentLabel: "gateway-" + string(mode), consts.AppNameLabel: owner.GetName()}
}

// EnsureKeySecret makes sure the key Secret name exists in the owner's namespace, generating a
// new key pair (owned by owner) when it does not. It never changes an existing Secret.
func EnsureKeySecret(ctx context.Context, c client.Client, owner client.Object, name string) error {
	s := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: name}, s)
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading key Secret %s: %w", name, err)
	}
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		return fmt.Errorf("generating a key pair: %w", err)
	}
	s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: owner.GetNamespace(), Name: name}}
	forge.MutateGatewayKeys(s, owner.GetLabels()[consts.RemoteClusterIDLabel], &k)
	if err := controllerutil.SetControllerReference(owner, s, c.Scheme()); err != nil {
		return fmt.Errorf("owning key Secret %s: %w", name, err)
	}
	if err := c.Create(ctx, s); err != nil {
		return fmt.Errorf("creating key Secret %s: %w", name, err)
	}
	return nil
}

// Ensure creates or updates the gateway's ServiceAccount, Role, RoleBinding and Deployment, and
// returns the Deployment.
func Ensure(ctx context.Context, c client.Client, p Params) (*appsv1.Deployment, error) {
	ns, name := p.Owner.GetNamespace(), Name(p.Owner)
	meta := func() metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	sa := &corev1.ServiceAccount{ObjectMeta: meta()}
	if err := createOrUpdate(ctx, c, p.Owner, sa, func() {}); err != nil {
		return nil, err
	}
	role := &rbacv1.Role{ObjectMeta: meta()}
	if err := createOrUpdate(ctx, c, p.Owner, role, func() {
		role.Rules = []rbacv1.PolicyRule{
			{APIGroups: []string{netv1beta1.GroupVersion.Group}, Resources: []string{"gatewayservers", "gatewayclients", "publickeies", "configurations"},
				Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{netv1beta1.GroupVersion.Group}, Resources: []string{"connections"}, Verbs: []string{"get", "list", "watch", "create", "update"}},
			{APIGroups: []string{netv1beta1.GroupVersion.Group}, Resources: []string{"connections/status"}, Verbs: []string{"get", "update", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}},
		}
	}); err != nil {
		return nil, err
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: meta()}
	if err := createOrUpdate(ctx, c, p.Owner, rb, func() {
		rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
		rb.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}
	}); err != nil {
		return nil, err
	}
	if err := ensureIPsBinding(ctx, c, p); err != nil {
		return nil, err
	}
	dep := &appsv1.Deployment{ObjectMeta: meta()}
	if err := createOrUpdate(ctx, c, p.Owner, dep, func() { renderDeployment(dep, p) }); err != nil {
		return nil, err
	}
	return dep, nil
}

// ensureIPsBinding creates or updates IPsRole in the Liqo namespace and the binding of the
// gateway's ServiceAccount to it (nothing when there is no Liqo namespace). An object cannot be owned across namespaces: the binding is
// owned by the tenant Namespace (the garbage collector removes it with the namespace) and
// RemoveIPsBinding removes it with its gateway; the Role, shared by every gateway, is owned by
// nobody.
func ensureIPsBinding(ctx context.Context, c client.Client, p Params) error {
	liqoNS := consts.LiqoNamespaceOr(p.LiqoNamespace)
	if err := c.Get(ctx, client.ObjectKey{Name: liqoNS}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
		return nil // no Liqo namespace (a bare test cluster): no IPs to read either
	} else if err != nil {
		return fmt.Errorf("reading the Liqo namespace %s: %w", liqoNS, err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: liqoNS, Name: IPsRole}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, role, func() error {
		role.Labels = Merge(role.Labels, map[string]string{consts.AppComponentLabel: "gateway"})
		role.Rules = ipsRules
		return nil
	}); err != nil && !apierrors.IsAlreadyExists(err) {
		// AlreadyExists: another gateway's reconcile made the shared Role a moment ago and the
		// cache has not seen it yet; the next reconcile brings it in line.
		return fmt.Errorf("writing Role %s/%s: %w", liqoNS, IPsRole, err)
	}
	tenant := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: p.Owner.GetNamespace()}, tenant); err != nil {
		return fmt.Errorf("reading namespace %s, the owner of the gateway's RoleBinding in %s: %w", p.Owner.GetNamespace(), liqoNS, err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: liqoNS, Name: IPsBindingName(p.Owner)}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, rb, func() error {
		rb.Labels = Merge(rb.Labels, map[string]string{consts.AppComponentLabel: "gateway"})
		rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: IPsRole}
		rb.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: Name(p.Owner), Namespace: p.Owner.GetNamespace()}}
		return controllerutil.SetOwnerReference(tenant, rb, c.Scheme())
	}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("writing RoleBinding %s/%s: %w", liqoNS, rb.Name, err)
	}
	return nil
}

// RemoveIPsBinding deletes the RoleBinding in the Liqo namespace (liqoNS; empty:
// consts.LiqoNamespace) of the gateway namespace/name, once the gateway is gone or going. A
// missing one is not an error.
func RemoveIPsBinding(ctx context.Context, c client.Client, liqoNS, namespace, name string) error {
	owner := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespaceOr(liqoNS), Name: IPsBindingName(owner)}}
	if err := c.Delete(ctx, rb); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting RoleBinding %s/%s: %w", rb.Namespace, rb.Name, err)
	}
	return nil
}

// ContainerName is the name of the gateway's container in its pod.
const ContainerName = "gateway"

// renderDeployment makes dep the template's Deployment (p.Base; empty: the built-in one) with
// what the gateway needs filled in. The controller owns: the selector and the pod labels it
// selects on (added to the template's), the ServiceAccount, and in the container named
// ContainerName (added when the template has none): the arguments that point the gateway at its
// objects (the template's own are appended after them, so they can add or override flags of
// liqo-gateway), privileged mode with the NET_ADMIN capability, the /dev/net/tun mount and, for
// servers, the UDP port. The pod runs in its node's network namespace (hostNetwork): the node
// routes what its pods send to the remote cluster's CIDRs into the tunnel, and what comes out
// of it to its pods, as the sandbox's gateway hosts do; privileged because the gateway turns on
// IP forwarding, which a container cannot otherwise write (upstream Liqo's gateway is
// privileged too). The image is the template's when it sets one, else the controller's. One
// replica (none when Stopped) and the Recreate strategy, unless the template says otherwise.
// Everything else is the template's.
func renderDeployment(dep *appsv1.Deployment, p Params) {
	base := p.Base
	if base == nil {
		base = &Base{}
	}
	image := p.Image
	if image == "" {
		image = DefaultImage
	}
	selector := Selector(p.Owner, p.Mode)
	dep.Labels = Merge(base.DeploymentMeta.Labels, selector)
	if len(base.DeploymentMeta.Annotations) > 0 || dep.Annotations != nil {
		dep.Annotations = Merge(dep.Annotations, base.DeploymentMeta.Annotations)
	}
	spec := *base.Deployment.DeepCopy()
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	if p.Stopped {
		spec.Replicas = ptr.To[int32](0)
	}
	spec.Selector = &metav1.LabelSelector{MatchLabels: selector}
	if spec.Strategy.Type == "" {
		// One gateway at a time: two would fight over the peer's session.
		spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	spec.Template.Labels = Merge(spec.Template.Labels, selector)
	spec.Template.Spec.ServiceAccountName = Name(p.Owner)
	spec.Template.Spec.DeprecatedServiceAccount = ""
	spec.Template.Spec.HostNetwork = true
	if spec.Template.Spec.DNSPolicy == "" || spec.Template.Spec.DNSPolicy == corev1.DNSClusterFirst {
		// The gateway resolves its peer's endpoint; a host-network pod's ClusterFirst is the
		// node's resolver unless asked for this way.
		spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}

	i := slices.IndexFunc(spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == ContainerName })
	if i < 0 {
		spec.Template.Spec.Containers = append([]corev1.Container{{Name: ContainerName}}, spec.Template.Spec.Containers...)
		i = 0
	}
	ctr := &spec.Template.Spec.Containers[i]
	if ctr.Image == "" {
		ctr.Image = image
	}
	ctr.Args = append([]string{"--mode=" + string(p.Mode), "--namespace=" + p.Owner.GetNamespace(), "--gateway=" + p.Owner.GetName(),
		"--secret=" + p.SecretName, "--liqo-namespace=" + consts.LiqoNamespaceOr(p.LiqoNamespace)}, ctr.Args...)
	if p.Mode == mode.Server {
		ctr.Ports = slices.DeleteFunc(ctr.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == PortName || cp.ContainerPort == p.Port })
		ctr.Ports = append(ctr.Ports, corev1.ContainerPort{Name: PortName, ContainerPort: p.Port, Protocol: corev1.ProtocolUDP})
	}
	if ctr.SecurityContext == nil {
		ctr.SecurityContext = &corev1.SecurityContext{}
	}
	ctr.SecurityContext.Privileged = ptr.To(true)
	if ctr.SecurityContext.Capabilities == nil {
		ctr.SecurityContext.Capabilities = &corev1.Capabilities{}
	}
	if !slices.Contains(ctr.SecurityContext.Capabilities.Add, "NET_ADMIN") {
		ctr.SecurityContext.Capabilities.Add = append(ctr.SecurityContext.Capabilities.Add, "NET_ADMIN")
	}
	if !slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == tunPath }) {
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: tunVolume, MountPath: tunPath})
	}
	if !slices.ContainsFunc(spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == tunVolume }) {
		spec.Template.Spec.Volumes = append(spec.Template.Spec.Volumes, corev1.Volume{Name: tunVolume, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: tunPath, Type: ptr.To(corev1.HostPathCharDev)}}})
	}
	dep.Spec = spec
}

const (
	tunVolume = "dev-net-tun"
	tunPath   = "/dev/net/tun"
	// PortName names the server's WireGuard port in its container and Service.
	PortName = "wireguard"
)

// Merge returns a copy of base with over's entries added (over wins); nil when both are empty.
func Merge(base, over map[string]string) map[string]string {
	if len(base) == 0 && len(over) == 0 {
		return nil
	}
	out := make(map[string]string, len(base)+len(over))
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}

func createOrUpdate(ctx context.Context, c client.Client, owner, obj client.Object, mutate func()) error {
	_, err := controllerutil.CreateOrUpdate(ctx, c, obj, func() error {
		mutate()
		return controllerutil.SetControllerReference(owner, obj, c.Scheme())
	})
	if err != nil {
		return fmt.Errorf("writing %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// InternalEndpoint is where the gateway of owner is reached inside its cluster, as upstream Liqo
// reports it: the IP of its pod and the node the pod runs on. It picks, among the pods of the
// gateway's Deployment that are not being deleted and have an IP, a ready one if any (the newest
// first); nil when there is none.
func InternalEndpoint(ctx context.Context, c client.Reader, owner client.Object, mode mode.Mode) (*netv1beta1.InternalGatewayEndpoint, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(owner.GetNamespace()), client.MatchingLabels(Selector(owner, mode))); err != nil {
		return nil, fmt.Errorf("listing the gateway pods of %s/%s: %w", owner.GetNamespace(), owner.GetName(), err)
	}
	var best *corev1.Pod
	score := func(p *corev1.Pod) int {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return 1
			}
		}
		return 0
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" || p.Status.Phase != corev1.PodRunning {
			continue
		}
		if best == nil || score(p) > score(best) ||
			score(p) == score(best) && p.CreationTimestamp.After(best.CreationTimestamp.Time) {
			best = p
		}
	}
	if best == nil {
		return nil, nil
	}
	ep := &netv1beta1.InternalGatewayEndpoint{IP: ptr.To(netv1beta1.IP(best.Status.PodIP))}
	if best.Spec.NodeName != "" {
		ep.Node = ptr.To(best.Spec.NodeName)
	}
	return ep, nil
}

// GatewayOfPod returns the name of the GatewayServer (mode server) or GatewayClient (mode client)
// whose Deployment pod is, from its labels; "" when pod is no such gateway's.
func GatewayOfPod(pod client.Object, mode mode.Mode) string {
	l := pod.GetLabels()
	if l[consts.AppComponentLabel] != "gateway-"+string(mode) {
		return ""
	}
	return l[consts.AppNameLabel]
}
