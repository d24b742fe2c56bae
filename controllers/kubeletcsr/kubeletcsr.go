// Package kubeletcsr approves the serving certificates of virtual nodes' kubelet endpoints:
// CertificateSigningRequests of signer kubernetes.io/kubelet-serving for a Node that is one of
// our virtual nodes, asked by the virtual kubelet that runs it, for the node's own name and
// advertised addresses only. Other kubelet-serving requests (real kubelets') are left alone;
// one that claims a virtual node's name but comes from someone else, or asks for other names or
// addresses, is denied.
//
// The controller manager needs `approve` on certificates.k8s.io signers
// kubernetes.io/kubelet-serving and `update` on certificatesigningrequests/approval for this.
package kubeletcsr

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// Reason is the reason of the conditions the approver sets.
const Reason = "LiqoVirtualNodeServingCertificate"

// Approver approves the kubelet-serving CSRs of virtual nodes.
type Approver struct {
	// Client reads VirtualNodes, Nodes and CSRs.
	Client client.Client
	// Kube updates the CSRs' approval.
	Kube kubernetes.Interface
	// Requesters are the users allowed to ask for the serving certificate of a VirtualNode's
	// node: the controller manager's own user when it hosts the node, the ServiceAccount of its
	// Deployment when a Deployment does.
	Requesters func(vn *offv1beta1.VirtualNode) []string
	// NodeWait is how long to wait before looking again when the Node is not registered yet.
	// Default 2s.
	NodeWait time.Duration
}

// Reconcile approves, denies or leaves one CSR.
func (a *Approver) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := a.Client.Get(ctx, req.NamespacedName, csr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || decided(csr) {
		return reconcile.Result{}, nil
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		return reconcile.Result{}, nil // not ours to judge: the API server validated it
	}
	cr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil || cr.CheckSignature() != nil {
		return reconcile.Result{}, nil
	}
	name, ok := strings.CutPrefix(cr.Subject.CommonName, "system:node:")
	if !ok {
		return reconcile.Result{}, nil
	}
	vn, err := a.virtualNode(ctx, name)
	if err != nil || vn == nil {
		return reconcile.Result{}, err // nil: a real node's request, someone else's business
	}
	log := log.FromContext(ctx).WithValues("csr", csr.Name, "node", name, "requester", csr.Spec.Username)
	if !slices.Contains(a.Requesters(vn), csr.Spec.Username) {
		return reconcile.Result{}, a.decide(ctx, csr, false,
			fmt.Sprintf("virtual node %s's serving certificate may only be requested by its virtual kubelet (%s), not by %s",
				name, strings.Join(a.Requesters(vn), " or "), csr.Spec.Username))
	}
	node := &corev1.Node{}
	if err := a.Client.Get(ctx, client.ObjectKey{Name: name}, node); apierrors.IsNotFound(err) {
		log.V(1).Info("node not registered yet: looking again")
		return reconcile.Result{RequeueAfter: a.nodeWait()}, nil
	} else if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading node %s for CSR %s: %w", name, csr.Name, err)
	}
	if node.Labels[consts.TypeLabel] != consts.VirtualNodeType {
		return reconcile.Result{}, a.decide(ctx, csr, false, fmt.Sprintf("node %s is not a virtual node", name))
	}
	if why := checkRequest(cr, csr.Spec.Usages, node); why != "" {
		if len(node.Status.Addresses) == 0 {
			log.V(1).Info("node has no address yet: looking again")
			return reconcile.Result{RequeueAfter: a.nodeWait()}, nil
		}
		return reconcile.Result{}, a.decide(ctx, csr, false, why)
	}
	log.Info("approving a virtual node's serving certificate")
	return reconcile.Result{}, a.decide(ctx, csr, true, fmt.Sprintf("serving certificate of virtual node %s, requested by its virtual kubelet", name))
}

func (a *Approver) nodeWait() time.Duration {
	if a.NodeWait > 0 {
		return a.NodeWait
	}
	return 2 * time.Second
}

// virtualNode returns the VirtualNode whose Node is name, or nil.
func (a *Approver) virtualNode(ctx context.Context, name string) (*offv1beta1.VirtualNode, error) {
	list := &offv1beta1.VirtualNodeList{}
	if err := a.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing VirtualNodes: %w", err)
	}
	for i := range list.Items {
		if list.Items[i].Name == name {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// checkRequest says what is wrong with a request for node's serving certificate, or "".
func checkRequest(cr *x509.CertificateRequest, usages []certificatesv1.KeyUsage, node *corev1.Node) string {
	if !slices.Equal(cr.Subject.Organization, []string{"system:nodes"}) {
		return fmt.Sprintf("organization %v is not [system:nodes]", cr.Subject.Organization)
	}
	if len(cr.EmailAddresses) > 0 || len(cr.URIs) > 0 {
		return "e-mail and URI names are not allowed"
	}
	for _, d := range cr.DNSNames {
		if d != node.Name {
			return fmt.Sprintf("DNS name %q is not the node's name %s", d, node.Name)
		}
	}
	var ips []net.IP
	for _, addr := range node.Status.Addresses {
		if ip := net.ParseIP(addr.Address); ip != nil {
			ips = append(ips, ip)
		}
	}
	for _, ip := range cr.IPAddresses {
		if !slices.ContainsFunc(ips, ip.Equal) {
			return fmt.Sprintf("IP %s is not an address of node %s", ip, node.Name)
		}
	}
	if len(cr.DNSNames)+len(cr.IPAddresses) == 0 {
		return "no DNS name or IP address"
	}
	allowed := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}
	for _, u := range usages {
		if !slices.Contains(allowed, u) {
			return fmt.Sprintf("usage %q is not for serving", u)
		}
	}
	if !slices.Contains(usages, certificatesv1.UsageServerAuth) {
		return "usage server auth is missing"
	}
	return ""
}

// decided reports whether the CSR was approved or denied already.
func decided(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied {
			return true
		}
	}
	return false
}

// decide approves or denies csr with message.
func (a *Approver) decide(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, approve bool, message string) error {
	t := certificatesv1.CertificateApproved
	if !approve {
		t = certificatesv1.CertificateDenied
		log.FromContext(ctx).Info("denying a kubelet-serving CSR", "csr", csr.Name, "why", message)
	}
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: Reason, Message: message, LastUpdateTime: metav1.Now()})
	_, err := a.Kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("recording the decision on CSR %s (%s): %w", csr.Name, t, err)
	}
	return nil
}

// SetupWithManager watches kubelet-serving CSRs, and virtual Nodes: a CSR that came before its
// Node registered, or got an address, is decided as soon as it has (not at the next NodeWait).
func (a *Approver) SetupWithManager(mgr ctrl.Manager) error {
	serving := predicate.NewPredicateFuncs(func(o client.Object) bool {
		csr, ok := o.(*certificatesv1.CertificateSigningRequest)
		return ok && csr.Spec.SignerName == certificatesv1.KubeletServingSignerName
	})
	virtual := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[consts.TypeLabel] == consts.VirtualNodeType
	})
	err := ctrl.NewControllerManagedBy(mgr).Named("kubeletcsr").
		For(&certificatesv1.CertificateSigningRequest{}, builder.WithPredicates(serving)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(a.pendingOfNode), builder.WithPredicates(virtual)).
		Complete(a)
	if err != nil {
		return fmt.Errorf("building the kubelet-serving CSR approver: %w", err)
	}
	return nil
}

// pendingOfNode are the undecided kubelet-serving CSRs that ask for the Node o's certificate.
func (a *Approver) pendingOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := a.Client.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "listing the CSRs that may wait for a node", "node", o.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		csr := &list.Items[i]
		if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || decided(csr) {
			continue
		}
		if block, _ := pem.Decode(csr.Spec.Request); block != nil {
			if cr, err := x509.ParseCertificateRequest(block.Bytes); err == nil && cr.Subject.CommonName == "system:node:"+o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: csr.Name}})
			}
		}
	}
	return out
}
