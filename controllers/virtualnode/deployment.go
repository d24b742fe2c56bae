package virtualnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// Names and labels of what the Deployment runner writes.
const (
	// KubeletClusterRole is what every virtual kubelet's ServiceAccount is bound to.
	KubeletClusterRole = "liqo-virtual-kubelet"
	// KubeletPort is the port of the kubelet endpoint in the virtual kubelet's pod.
	KubeletPort = 10250
	// fieldOwner is the server-side-apply field manager of the runner.
	fieldOwner = "liqo-virtual-node"
	appName    = "liqo-virtual-kubelet"
)

// Deployments runs each VirtualNode's virtual kubelet as a Deployment of
// cmd/liqo-virtual-kubelet in the VirtualNode's namespace, with a ServiceAccount of its own
// bound to KubeletClusterRole. The Deployment and the ServiceAccount are owned by the
// VirtualNode; the ClusterRoleBinding (cluster-scoped, it cannot be owned by a namespaced
// object) is removed by the VirtualNode's finalizer, after the Deployment and before the Node.
type Deployments struct {
	// Image is the liqo-virtual-kubelet image. Required.
	Image string
	// ConsumerID is the local cluster's ID, passed to the virtual kubelets.
	ConsumerID corev1beta1.ClusterID
	// ExtraArgs are more flags of the virtual kubelets, e.g. --zap-log-level=debug.
	ExtraArgs []string
}

// DeploymentName is the name of the Deployment and of the ServiceAccount running vn's virtual
// kubelet, in vn's namespace.
func DeploymentName(vn *offv1beta1.VirtualNode) string { return "liqo-vk-" + vn.Name }

// ClusterRoleBindingName is the name of the binding of vn's ServiceAccount to
// KubeletClusterRole ('.' cannot be in a namespace, so names do not collide).
func ClusterRoleBindingName(vn *offv1beta1.VirtualNode) string {
	return "liqo-vk-" + vn.Namespace + "." + vn.Name
}

// ServiceAccountUser is the user name of vn's virtual kubelet: the one allowed to ask for its
// node's serving certificate.
func ServiceAccountUser(vn *offv1beta1.VirtualNode) string {
	return "system:serviceaccount:" + vn.Namespace + ":" + DeploymentName(vn)
}

// KubeletClusterRoleRules are what a virtual kubelet needs, and nothing more: its Node and
// Lease; the pods of the node (status, eviction of their local copy) and what they refer to
// (read), the local volumes of the claims of the virtual storage class it provisions (and the
// class), service-account tokens for them, events; its serving certificate's CSR and the
// authorization of kubelet API callers; the NamespaceMaps and VirtualNodes it follows; the
// Configurations it translates the offloaded pods' addresses with (remapped networks); the
// identity Secret (read, among the Secrets reflected from every offloaded namespace).
var KubeletClusterRoleRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"get", "update", "patch"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "update", "patch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"get", "update", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"namespaces", "configmaps", "secrets", "services", "serviceaccounts", "persistentvolumeclaims"},
		Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: []string{"get", "create", "delete"}},
	{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses"}, Verbs: []string{"get"}},
	{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}},
	{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"get", "list", "watch", "create"}},
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{"offloading.liqo.io"}, Resources: []string{"namespacemaps", "virtualnodes"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"networking.liqo.io"}, Resources: []string{"configurations"}, Verbs: []string{"get", "list", "watch"}},
}

// labelValue fits s in a label value (63 characters), keeping it unique with a hash.
func labelValue(s string) string {
	if len(s) <= 63 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return s[:54] + "-" + hex.EncodeToString(sum[:4])
}

// runDeployment applies vn's virtual kubelet Deployment, ServiceAccount and binding, and
// reports the Deployment's availability in vn's status.
func (r *Reconciler) runDeployment(ctx context.Context, vn *offv1beta1.VirtualNode) (reconcile.Result, error) {
	if r.Deployments.Image == "" {
		return reconcile.Result{}, r.setStatus(ctx, vn, offv1beta1.NoneConditionStatusType,
			"no virtual-kubelet image: start the controller manager with --virtual-kubelet-image")
	}
	owner := metav1ac.OwnerReference().WithAPIVersion(offv1beta1.GroupVersion.String()).WithKind("VirtualNode").
		WithName(vn.Name).WithUID(vn.UID).WithController(true).WithBlockOwnerDeletion(true)
	name := DeploymentName(vn)
	labels := map[string]string{
		"app.kubernetes.io/name":       appName,
		"app.kubernetes.io/instance":   labelValue(vn.Name),
		"app.kubernetes.io/managed-by": "liqo-controller-manager",
		consts.RemoteClusterIDLabel:    string(vn.Spec.ClusterID),
	}
	role := rbacv1ac.ClusterRole(KubeletClusterRole).WithLabels(map[string]string{"app.kubernetes.io/managed-by": "liqo-controller-manager"})
	for _, rule := range KubeletClusterRoleRules {
		role.WithRules(rbacv1ac.PolicyRule().WithAPIGroups(rule.APIGroups...).WithResources(rule.Resources...).WithVerbs(rule.Verbs...))
	}
	sa := corev1ac.ServiceAccount(name, vn.Namespace).WithLabels(labels).WithOwnerReferences(owner)
	crb := rbacv1ac.ClusterRoleBinding(ClusterRoleBindingName(vn)).WithLabels(labels).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(KubeletClusterRole)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithNamespace(vn.Namespace).WithName(name))
	for _, ac := range []struct {
		what string
		obj  runtime.ApplyConfiguration
	}{{"ClusterRole " + KubeletClusterRole, role}, {"ServiceAccount " + vn.Namespace + "/" + name, sa},
		{"ClusterRoleBinding " + ClusterRoleBindingName(vn), crb}, {"Deployment " + vn.Namespace + "/" + name, r.deployment(vn, name, labels, owner)}} {
		if err := r.Client.Apply(ctx, ac.obj, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return reconcile.Result{}, fmt.Errorf("virtual node %s/%s: applying %s: %w", vn.Namespace, vn.Name, ac.what, err)
		}
	}
	dep := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: vn.Namespace, Name: name}, dep); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err) // the watch brings it back
	}
	if dep.Status.AvailableReplicas > 0 {
		return reconcile.Result{}, r.setStatus(ctx, vn, offv1beta1.RunningConditionStatusType, "running as Deployment "+vn.Namespace+"/"+name)
	}
	return reconcile.Result{}, r.setStatus(ctx, vn, offv1beta1.CreatingConditionStatusType, "Deployment "+vn.Namespace+"/"+name+" has no available replica yet")
}

// deployment is the Deployment running vn's virtual kubelet.
func (r *Reconciler) deployment(vn *offv1beta1.VirtualNode, name string, labels map[string]string, owner *metav1ac.OwnerReferenceApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	selector := map[string]string{"app.kubernetes.io/name": appName, "app.kubernetes.io/instance": labels["app.kubernetes.io/instance"]}
	args := []string{
		"--virtual-node=" + vn.Namespace + "/" + vn.Name,
		"--consumer-cluster-id=" + string(r.Deployments.ConsumerID),
		fmt.Sprintf("--listen=0.0.0.0:%d", KubeletPort),
		"--node-ip=$(POD_IP)",
		"--metrics-bind-address=:8080",
		"--health-probe-bind-address=:8081",
	}
	args = append(args, r.Deployments.ExtraArgs...)
	secret := ""
	if vn.Spec.KubeconfigSecretRef != nil {
		secret = vn.Spec.KubeconfigSecretRef.Name
	}
	container := corev1ac.Container().WithName("virtual-kubelet").WithImage(r.Deployments.Image).WithArgs(args...).
		WithEnv(corev1ac.EnvVar().WithName("POD_IP").WithValueFrom(corev1ac.EnvVarSource().
			WithFieldRef(corev1ac.ObjectFieldSelector().WithAPIVersion("v1").WithFieldPath("status.podIP")))).
		WithPorts(
			corev1ac.ContainerPort().WithName("kubelet").WithContainerPort(KubeletPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName("metrics").WithContainerPort(8080).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName("probes").WithContainerPort(8081).WithProtocol(corev1.ProtocolTCP)).
		WithLivenessProbe(corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/healthz").WithPort(intstr.FromString("probes")))).
		WithReadinessProbe(corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/readyz").WithPort(intstr.FromString("probes")))).
		WithResources(corev1ac.ResourceRequirements().WithRequests(corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")})).
		WithSecurityContext(corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false).WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")))
	return appsv1ac.Deployment(name, vn.Namespace).WithLabels(labels).WithOwnerReferences(owner).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			// One virtual kubelet at a time per node: the old one stops before the new one starts.
			WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithAnnotations(map[string]string{consts.KubeconfigSecretAnnotation: secret}).
				WithSpec(corev1ac.PodSpec().
					WithServiceAccountName(name).
					WithSecurityContext(corev1ac.PodSecurityContext().WithRunAsNonRoot(true).
						WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
					WithContainers(container))))
}

// stopKubelet stops vn's virtual kubelet and removes its Node: in the runner, or, for
// Deployments, once the Deployment and its pods are gone (foreground deletion: a virtual
// kubelet still running would register the Node again), then the binding. It returns false
// while the Deployment is still going.
func (r *Reconciler) stopKubelet(ctx context.Context, vn *offv1beta1.VirtualNode) (bool, error) {
	if r.Deployments == nil {
		return true, r.Runner.Stop(ctx, vn.Name)
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: vn.Namespace, Name: DeploymentName(vn)}}
	err := r.Client.Delete(ctx, dep, client.PropagationPolicy(metav1.DeletePropagationForeground))
	if err == nil {
		return false, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("deleting the virtual kubelet Deployment %s/%s: %w", dep.Namespace, dep.Name, err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleBindingName(vn)}}
	if err := r.Client.Delete(ctx, crb); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("deleting ClusterRoleBinding %s: %w", crb.Name, err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: vn.Name}}
	if err := r.Client.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("deleting node %s: %w", vn.Name, err)
	}
	return true, nil
}
