package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/grantenforcement"
	"github.com/peerkit/terraform-provider-liqo/controllers/podplacement"
	"github.com/peerkit/terraform-provider-liqo/controllers/virtualnode"
	"github.com/peerkit/terraform-provider-liqo/internal/api"
	"github.com/peerkit/terraform-provider-liqo/internal/api/crds"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/cli"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/workload"
	"github.com/peerkit/terraform-provider-liqo/internal/webhookserver"
)

// uninstallCommand is the subcommand that removes what the manager made (the chart's
// pre-delete hook runs it).
const uninstallCommand = "uninstall"

// The label the manager puts on the objects it makes, and its value.
const (
	managedByLabel = consts.ManagedByLabel
	managedBy      = consts.ManagedByControllerManager
)

// uninstallOptions are the flags of the uninstall subcommand.
type uninstallOptions struct {
	kubeconfig string
	// manager is the namespace/name of the manager's Deployment, scaled to zero first so that it
	// does not make again what is being removed.
	manager string
	// purge removes the peerings too: every object of our kinds, tenant and remote namespaces,
	// virtual nodes.
	purge bool
	// manageCRDs says the CRDs are the manager's (--manage-crds): they are deleted.
	manageCRDs bool
	// deleteNamespace deletes the liqo namespace itself (false when it is the release's).
	deleteNamespace bool
	timeout         time.Duration
	// liqoNS is the namespace Liqo is installed in (the manager's --liqo-namespace).
	liqoNS string
}

func parseUninstall(args []string, out io.Writer) (*uninstallOptions, error) {
	o := &uninstallOptions{}
	fs := flag.NewFlagSet("liqo-controller-manager "+uninstallCommand, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: liqo-controller-manager %s [flags]\n\n"+
			"Removes what the controller manager made in the cluster: its CRDs (with --manage-crds), the %s namespace's objects\n"+
			"(cluster ID, signing key, Networks, gateway templates, webhook certificate, lease) or the namespace itself,\n"+
			"the webhook configurations, the admission policy and the peer ClusterRoles. It refuses while peerings exist\n"+
			"(ForeignClusters, or any other object of our kinds), unless --purge.\n\n", uninstallCommand, consts.LiqoNamespace)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: in-cluster configuration)")
	fs.StringVar(&o.liqoNS, "liqo-namespace", consts.LiqoNamespace, "the namespace Liqo is installed in (the manager's --liqo-namespace)")
	fs.StringVar(&o.manager, "manager-deployment", "", "namespace/name of the manager's Deployment, scaled to zero first so that it does not make again what is removed")
	fs.BoolVar(&o.purge, "purge", false, "remove the peerings too: every object of our kinds (their finalizers dropped), tenant and remote namespaces, virtual nodes")
	fs.BoolVar(&o.manageCRDs, "manage-crds", true, "the CRDs are the manager's (as its own --manage-crds): delete them; false: keep them and delete only the manager's objects of our kinds")
	fs.BoolVar(&o.deleteNamespace, "delete-namespace", true, "delete the Liqo namespace (--liqo-namespace) itself; false (when it is the chart's release namespace): only the manager's objects in it")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long to wait for the manager to stop and for everything to be gone")
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	if o.manager != "" {
		if _, err := webhookserver.ParseService(o.manager); err != nil {
			return nil, fmt.Errorf("--manager-deployment %q is not namespace/name of a Deployment, e.g. liqo/liqo-controller-manager", o.manager)
		}
	}
	if o.timeout <= 0 {
		return nil, fmt.Errorf("--timeout %s must be positive", o.timeout)
	}
	return o, nil
}

// runUninstall removes what the manager made, and waits until it is gone.
func runUninstall(ctx context.Context, args []string, out io.Writer) error {
	o, err := parseUninstall(args, out)
	if err != nil {
		return err
	}
	cfg, err := (&options{ManagerFlags: cli.ManagerFlags{Kubeconfig: o.kubeconfig}, qps: 100, burst: 200}).restConfig()
	if err != nil {
		return err
	}
	c, err := api.NewClient(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	u := &uninstaller{c: c, o: o, out: out}
	return u.run(ctx)
}

type uninstaller struct {
	c   client.Client
	o   *uninstallOptions
	out io.Writer
	// gone are the objects deleted, checked at the end.
	gone []client.Object
}

func (u *uninstaller) logf(format string, args ...any) {
	fmt.Fprintf(u.out, "uninstall: "+format+"\n", args...)
}

func (u *uninstaller) run(ctx context.Context) error {
	kinds, err := ourKinds()
	if err != nil {
		return err
	}
	peerings, others, err := u.userObjects(ctx, kinds)
	if err != nil {
		return err
	}
	if (len(peerings) > 0 || len(others) > 0) && !u.o.purge {
		return refusal(peerings, others)
	}
	// The webhooks go first: with the manager stopped, their failurePolicy would refuse what
	// they guard.
	if err := u.deleteWebhooks(ctx); err != nil {
		return err
	}
	if err := u.stopManager(ctx); err != nil {
		return err
	}
	// Again: a manager that was still running may have written them back.
	if err := u.deleteWebhooks(ctx); err != nil {
		return err
	}
	if u.o.purge {
		if err := u.purge(ctx, kinds); err != nil {
			return err
		}
	}
	if err := u.deleteClusterObjects(ctx); err != nil {
		return err
	}
	if err := u.deleteNamespaceObjects(ctx, kinds); err != nil {
		return err
	}
	if u.o.manageCRDs {
		all, err := crds.All()
		if err != nil {
			return err
		}
		for _, crd := range all {
			if err := u.delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd.Name}}); err != nil {
				return err
			}
		}
	}
	if u.o.deleteNamespace {
		if err := u.delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespaceOr(u.o.liqoNS)}}); err != nil {
			return err
		}
	}
	return u.waitGone(ctx)
}

// ourKinds are the kinds of our CRDs, at their storage versions.
func ourKinds() ([]schema.GroupVersionKind, error) {
	all, err := crds.All()
	if err != nil {
		return nil, err
	}
	var out []schema.GroupVersionKind
	for _, crd := range all {
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				out = append(out, schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind})
			}
		}
	}
	return out, nil
}

// ownObject says whether an object of our kinds is one the manager made for itself (its
// Networks, API-server proxy IP and default gateway templates in the Liqo namespace liqoNS), not
// part of a peering.
func ownObject(o *unstructured.Unstructured, liqoNS string) bool {
	return o.GetNamespace() == liqoNS && o.GetLabels()[managedByLabel] == managedBy
}

// list lists the objects of kind, none when the kind is not served (its CRD is gone).
func (u *uninstaller) list(ctx context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := u.c.List(ctx, l); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	return l.Items, nil
}

// userObjects are the ForeignClusters (peerings) and the other objects of our kinds that are
// not the manager's own, by "Kind namespace/name".
func (u *uninstaller) userObjects(ctx context.Context, kinds []schema.GroupVersionKind) (peerings, others []string, err error) {
	for _, gvk := range kinds {
		items, err := u.list(ctx, gvk)
		if err != nil {
			return nil, nil, err
		}
		for i := range items {
			o := &items[i]
			switch {
			case gvk.Kind == "ForeignCluster":
				peerings = append(peerings, o.GetName())
			case !ownObject(o, consts.LiqoNamespaceOr(u.o.liqoNS)) && gvk.Kind != netv1beta1.InternalNodeKind: // one per node, the manager's
				others = append(others, gvk.Kind+" "+client.ObjectKeyFromObject(o).String())
			}
		}
	}
	slices.Sort(peerings)
	slices.Sort(others)
	return peerings, others, nil
}

func refusal(peerings, others []string) error {
	const shown = 10
	more := func(s []string) string {
		if len(s) > shown {
			return strings.Join(s[:shown], ", ") + fmt.Sprintf(" and %d more", len(s)-shown)
		}
		return strings.Join(s, ", ")
	}
	var what []string
	if len(peerings) > 0 {
		what = append(what, fmt.Sprintf("%d peering(s) exist (ForeignClusters %s)", len(peerings), more(peerings)))
	}
	if len(others) > 0 {
		what = append(what, fmt.Sprintf("%d object(s) of a peering remain (%s)", len(others), more(others)))
	}
	return fmt.Errorf("refusing to uninstall: %s. Remove the peerings first (terraform destroy, liqoctl unpeer), "+
		"or remove them with everything else: --purge (chart: helm upgrade --set uninstall.purge=true, then helm uninstall)", strings.Join(what, "; "))
}

// delete deletes obj (in the background: dependents are collected) and records it to wait for.
func (u *uninstaller) delete(ctx context.Context, obj client.Object) error {
	err := u.c.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("deleting %s %s: %w", u.kindOf(obj), client.ObjectKeyFromObject(obj), err)
	}
	u.logf("deleted %s %s", u.kindOf(obj), client.ObjectKeyFromObject(obj))
	u.gone = append(u.gone, obj)
	return nil
}

// deleteIfOurs deletes obj when it exists and carries the manager's label.
func (u *uninstaller) deleteIfOurs(ctx context.Context, obj client.Object) error {
	if err := u.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("reading %s %s: %w", u.kindOf(obj), client.ObjectKeyFromObject(obj), err)
	}
	if obj.GetLabels()[managedByLabel] != managedBy {
		u.logf("kept %s %s: not labelled %s=%s", u.kindOf(obj), client.ObjectKeyFromObject(obj), managedByLabel, managedBy)
		return nil
	}
	return u.delete(ctx, obj)
}

func (u *uninstaller) kindOf(obj client.Object) string {
	if gvk, err := apiutil.GVKForObject(obj, u.c.Scheme()); err == nil {
		return gvk.Kind
	}
	return fmt.Sprintf("%T", obj)
}

func (u *uninstaller) deleteWebhooks(ctx context.Context) error {
	if err := u.delete(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: podplacement.Configuration}}); err != nil {
		return err
	}
	return u.delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: grantenforcement.Configuration}})
}

// stopManager scales the manager's Deployment to zero and waits until none of its pods is left.
func (u *uninstaller) stopManager(ctx context.Context) error {
	if u.o.manager == "" {
		return nil
	}
	ref, err := webhookserver.ParseService(u.o.manager)
	if err != nil {
		return fmt.Errorf("--manager-deployment: %w", err)
	}
	dep := &appsv1.Deployment{}
	if err := u.c.Get(ctx, *ref, dep); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading the manager's Deployment %s: %w", ref, err)
	}
	if err := u.c.Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`))); err != nil {
		return fmt.Errorf("scaling the manager's Deployment %s to zero: %w", ref, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil {
		return fmt.Errorf("the manager's Deployment %s: selector: %w", ref, err)
	}
	u.logf("scaled Deployment %s to zero", ref)
	var left int
	err = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := u.c.List(ctx, pods, client.InNamespace(ref.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return false, fmt.Errorf("listing the manager's pods in %s: %w", ref.Namespace, err)
		}
		left = len(pods.Items)
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the manager's pods (Deployment %s) to stop, %d left: %w", ref, left, err)
	}
	return nil
}

// purge removes every object of our kinds (dropping finalizers: no controller runs to clear
// them), virtual nodes, and tenant and remote namespaces.
func (u *uninstaller) purge(ctx context.Context, kinds []schema.GroupVersionKind) error {
	for _, gvk := range kinds {
		items, err := u.list(ctx, gvk)
		if err != nil {
			return err
		}
		for i := range items {
			o := &items[i]
			if err := u.dropFinalizers(ctx, o); err != nil {
				return err
			}
			if err := u.delete(ctx, o); err != nil {
				return err
			}
		}
	}
	nodes := &corev1.NodeList{}
	if err := u.c.List(ctx, nodes, client.MatchingLabels{consts.TypeLabel: consts.VirtualNodeType}); err != nil {
		return fmt.Errorf("listing virtual nodes (labelled %s=%s): %w", consts.TypeLabel, consts.VirtualNodeType, err)
	}
	for i := range nodes.Items {
		if err := u.delete(ctx, &nodes.Items[i]); err != nil {
			return err
		}
	}
	bindings := &rbacv1.ClusterRoleBindingList{}
	if err := u.c.List(ctx, bindings, client.MatchingLabels{managedByLabel: managedBy}); err != nil {
		return fmt.Errorf("listing ClusterRoleBindings labelled %s=%s: %w", managedByLabel, managedBy, err)
	}
	for i := range bindings.Items {
		if b := &bindings.Items[i]; b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == virtualnode.KubeletClusterRole {
			if err := u.delete(ctx, b); err != nil {
				return err
			}
		}
	}
	for _, sel := range []labels.Set{{consts.TenantNamespaceLabel: "true"}, {consts.RemoteNamespaceLabel: "true"}} {
		nss := &corev1.NamespaceList{}
		if err := u.c.List(ctx, nss, client.MatchingLabels(sel)); err != nil {
			return fmt.Errorf("listing namespaces labelled %s: %w", sel, err)
		}
		for i := range nss.Items {
			if err := u.delete(ctx, &nss.Items[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (u *uninstaller) dropFinalizers(ctx context.Context, o client.Object) error {
	if len(o.GetFinalizers()) == 0 {
		return nil
	}
	err := u.c.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("dropping the finalizers of %s %s: %w", u.kindOf(o), client.ObjectKeyFromObject(o), err)
	}
	return nil
}

// deleteClusterObjects deletes the admission policies and the ClusterRoles the manager keeps.
func (u *uninstaller) deleteClusterObjects(ctx context.Context) error {
	for _, obj := range []client.Object{
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: consts.ReflectedSecretsPolicy}},
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: consts.ReflectedSecretsPolicy}},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: consts.SliceCordonPolicy}},
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: consts.SliceCordonPolicy}},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: consts.ContractProposalPolicy}},
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: consts.ContractProposalPolicy}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: clusteridentity.RemoteControlPlaneClusterRole}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: clusteridentity.RemoteWorkloadClusterRole}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: clusteridentity.SliceWorkloadClusterRole}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: virtualnode.KubeletClusterRole}},
	} {
		if err := u.deleteIfOurs(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// deleteNamespaceObjects deletes the manager's objects in the liqo namespace: needed when the
// namespace stays (it is the release's) or the CRDs stay (not the manager's).
func (u *uninstaller) deleteNamespaceObjects(ctx context.Context, kinds []schema.GroupVersionKind) error {
	if u.o.deleteNamespace && u.o.manageCRDs {
		return nil // all goes with the namespace and the CRDs
	}
	ns := consts.LiqoNamespaceOr(u.o.liqoNS)
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: consts.ClusterIDConfigMap}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: consts.SigningKeySecret}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: webhookserver.DefaultSecretName}},
	} {
		if err := u.deleteIfOurs(ctx, obj); err != nil {
			return err
		}
	}
	// The leader-election Lease carries no label; its name is the manager's.
	if err := u.delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "liqo-controller-manager"}}); err != nil {
		return err
	}
	if u.o.manageCRDs {
		return nil // the Networks and templates go with the CRDs
	}
	for _, gvk := range kinds {
		if !ownKind(gvk) {
			continue
		}
		items, err := u.list(ctx, gvk)
		if err != nil {
			return err
		}
		for i := range items {
			if o := &items[i]; ownObject(o, consts.LiqoNamespaceOr(u.o.liqoNS)) || gvk.Kind == netv1beta1.InternalNodeKind {
				if err := u.delete(ctx, o); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ownKind says whether the manager makes objects of kind for itself: Networks, IPs (the
// API-server proxy's), the default gateway templates and the fabric's InternalNodes.
func ownKind(gvk schema.GroupVersionKind) bool {
	return gvk.Kind == "Network" || gvk.Kind == netv1beta1.InternalNodeKind || gvk.Kind == "IP" || gvk.Kind == workload.ServerTemplateKind || gvk.Kind == workload.ClientTemplateKind
}

// waitGone waits until every deleted object is gone (a namespace no longer Terminating, a CRD
// no longer there).
func (u *uninstaller) waitGone(ctx context.Context) error {
	var left []string
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		left = left[:0]
		for _, obj := range u.gone {
			probe, ok := obj.DeepCopyObject().(client.Object)
			if !ok {
				continue
			}
			err := u.c.Get(ctx, client.ObjectKeyFromObject(obj), probe)
			switch {
			case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			case err != nil:
				return false, fmt.Errorf("checking that %s %s is gone: %w", u.kindOf(obj), client.ObjectKeyFromObject(obj), err)
			default:
				left = append(left, u.kindOf(obj)+" "+client.ObjectKeyFromObject(obj).String())
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for what was deleted to be gone; left: %s: %w", strings.Join(left, ", "), errors.Join(err, ctx.Err()))
	}
	u.logf("done: %d objects removed", len(u.gone))
	return nil
}
