package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/peerkit/terraform-provider-liqo/controllers/kubeletcsr"
	"github.com/peerkit/terraform-provider-liqo/controllers/virtualnode"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	vreflectors "github.com/peerkit/terraform-provider-liqo/vnode/reflectors"
)

// Where virtual kubelets run.
const (
	inProcess  = "inprocess"
	deployment = "deployment"
)

// virtualKubeletOptions say where virtual kubelets run, where their kubelet endpoint is, and
// how they reflect (passed on to Deployments as flags).
type virtualKubeletOptions struct {
	mode       string
	image      string
	address    string
	advertise  string
	reflection vreflectors.Options
}

func (v *virtualKubeletOptions) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&v.mode, "virtual-kubelet", inProcess, "where virtual kubelets run: "+inProcess+" (in this manager) or "+deployment+" (a Deployment of liqo-virtual-kubelet per virtual node)")
	fs.StringVar(&v.image, "virtual-kubelet-image", "", "image of liqo-virtual-kubelet, for --virtual-kubelet="+deployment)
	fs.StringVar(&v.address, "virtual-kubelet-address", "127.0.0.1:0", "where in-process virtual nodes serve their kubelet endpoint (logs, exec), host:port; port 0 gives each node a free port")
	fs.StringVar(&v.advertise, "virtual-kubelet-advertise-ip", "", "the InternalIP in-process virtual nodes advertise (default: the host of --virtual-kubelet-address; in a pod, its IP)")
	v.reflection.Bind(fs)
}

func (v *virtualKubeletOptions) validate() error {
	if err := v.reflection.Validate(); err != nil {
		return err
	}
	switch v.mode {
	case inProcess:
	case deployment:
		if v.image == "" {
			return fmt.Errorf("--virtual-kubelet=%s needs --virtual-kubelet-image", deployment)
		}
	default:
		return fmt.Errorf("--virtual-kubelet %q is neither %s nor %s", v.mode, inProcess, deployment)
	}
	return nil
}

// setupVirtualNodes registers the VirtualNode reconciler with the chosen runner and the
// approver of the virtual nodes' kubelet serving certificates.
func setupVirtualNodes(mgr ctrl.Manager, o *options, kube kubernetes.Interface) error {
	r := &virtualnode.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}
	var requesters func(*offv1beta1.VirtualNode) []string
	if o.vk.mode == deployment {
		r.Deployments = &virtualnode.Deployments{Image: o.vk.image, ConsumerID: o.identity.ClusterID, ExtraArgs: o.vk.reflection.Args()}
		requesters = func(vn *offv1beta1.VirtualNode) []string { return []string{virtualnode.ServiceAccountUser(vn)} }
	} else {
		r.Runner = vnode.NewRunner(kube, vnode.Options{ConsumerID: o.identity.ClusterID, LocalConfig: mgr.GetConfig(),
			Reflectors: reflectors(o.vk.reflection), KubeletAddress: o.vk.address, KubeletAdvertiseIP: o.vk.advertise}, mgr.GetLogger().WithName("vnode"))
		self, err := selfUser(kube)
		if err != nil {
			return err
		}
		requesters = func(*offv1beta1.VirtualNode) []string { return []string{self} }
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the virtual-node reconciler: %w", err)
	}
	if err := (&kubeletcsr.Approver{Client: mgr.GetClient(), Kube: kube, Requesters: requesters}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the kubelet-serving CSR approver: %w", err)
	}
	return nil
}

// selfUser is the user name this manager authenticates as (it requests its in-process
// virtual nodes' serving certificates).
func selfUser(kube kubernetes.Interface) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("asking the API server who this manager is (SelfSubjectReview): %w", err)
	}
	return res.Status.UserInfo.Username, nil
}
