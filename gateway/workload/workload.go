// Package workload renders what runs a gateway in a cluster, for the GatewayServer and
// GatewayClient controllers: the key Secret (generated when missing), the ServiceAccount and
// Role the gateway reads its objects with, and the Deployment of cmd/liqo-gateway (NET_ADMIN,
// /dev/net/tun).
package workload

import (
	"context"
	"fmt"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/peerkit/terraform-provider-liqo/gateway/agent"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// DefaultImage is the gateway image when the controller names none.
const DefaultImage = "ghcr.io/peerkit/liqo-gateway:latest"

// Labels.
const (
	// RemoteClusterIDLabel names the remote cluster of a peering's objects.
	RemoteClusterIDLabel = "liqo.io/remote-cluster-id"
	// GatewayResourceLabel ("true") marks the network objects a gateway reads.
	GatewayResourceLabel = "networking.liqo.io/gateway-resource"
	// ComponentLabel and NameLabel select a gateway's pods.
	ComponentLabel = "app.kubernetes.io/component"
	// NameLabel holds the gateway object's name.
	NameLabel = "app.kubernetes.io/name"
)

// Params describe one gateway's workload.
type Params struct {
	// Owner is the GatewayServer or GatewayClient; everything rendered is owned by it.
	Owner client.Object
	// Mode is server or client.
	Mode agent.Mode
	// SecretName is the key Secret.
	SecretName string
	// Image is the gateway image; empty: DefaultImage.
	Image string
	// Port is the UDP port the server listens on (server only).
	Port int32
}

// Name is the name of the Deployment, ServiceAccount, Role and RoleBinding of a gateway.
func Name(owner client.Object) string { return "gw-" + owner.GetName() }

// Selector is the pod labels of a gateway.
func Selector(owner client.Object, mode agent.Mode) map[string]string {
	return map[string]string{ComponentLabel: "gateway-" + string(mode), NameLabel: owner.GetName()}
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
	pub := k.PublicKey()
	s = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: owner.GetNamespace(), Name: name, Labels: map[string]string{GatewayResourceLabel: "true"}},
		Data:       map[string][]byte{agent.PrivateKeyField: k[:], agent.PublicKeyField: pub[:]},
	}
	if id := owner.GetLabels()[RemoteClusterIDLabel]; id != "" {
		s.Labels[RemoteClusterIDLabel] = id
	}
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
	dep := &appsv1.Deployment{ObjectMeta: meta()}
	if err := createOrUpdate(ctx, c, p.Owner, dep, func() { renderDeployment(dep, p) }); err != nil {
		return nil, err
	}
	return dep, nil
}

func renderDeployment(dep *appsv1.Deployment, p Params) {
	image := p.Image
	if image == "" {
		image = DefaultImage
	}
	labels := Selector(p.Owner, p.Mode)
	args := []string{"--mode=" + string(p.Mode), "--namespace=" + p.Owner.GetNamespace(), "--gateway=" + p.Owner.GetName(), "--secret=" + p.SecretName}
	var ports []corev1.ContainerPort
	if p.Mode == agent.ModeServer {
		ports = []corev1.ContainerPort{{Name: "wireguard", ContainerPort: p.Port, Protocol: corev1.ProtocolUDP}}
	}
	dep.Labels = labels
	dep.Spec.Replicas = ptr.To[int32](1)
	dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	// One gateway at a time: two would fight over the peer's session.
	dep.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	dep.Spec.Template.Labels = labels
	dep.Spec.Template.Spec.ServiceAccountName = Name(p.Owner)
	dep.Spec.Template.Spec.Containers = []corev1.Container{{
		Name:  "gateway",
		Image: image,
		Args:  args,
		Ports: ports,
		SecurityContext: &corev1.SecurityContext{
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "dev-net-tun", MountPath: "/dev/net/tun"}},
	}}
	dep.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "dev-net-tun", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: "/dev/net/tun", Type: ptr.To(corev1.HostPathCharDev)}}}}
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
