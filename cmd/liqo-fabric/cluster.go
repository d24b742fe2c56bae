package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/peerkit/terraform-provider-liqo/gateway/fabric"
	"github.com/peerkit/terraform-provider-liqo/gateway/fabric/nodeagent"
	"github.com/peerkit/terraform-provider-liqo/internal/api"
	"github.com/peerkit/terraform-provider-liqo/internal/cli"
	"github.com/peerkit/terraform-provider-liqo/internal/netns"
)

// runCluster runs the node agent's reconciler in a manager until ctx ends, then removes the
// node's fabric when cleanup is set.
func runCluster(ctx context.Context, log logr.Logger, dp *fabric.Dataplane, f flags) error {
	cfg, err := cli.RESTConfig(f.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading cluster credentials: %w", err)
	}
	if f.apiNetns != "" {
		if cfg.Dial, err = netns.Dialer(f.apiNetns); err != nil {
			return fmt.Errorf("--api-netns: %w", err)
		}
	}
	scheme, err := api.NewScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Logger: log,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{&corev1.Node{}: {Transform: slimNode}}}})
	if err != nil {
		return fmt.Errorf("creating the fabric agent's manager: %w", err)
	}
	r := &nodeagent.Reconciler{Client: mgr.GetClient(), NodeName: f.nodeName, LiqoNamespace: f.liqoNamespace, Dataplane: dp,
		Recorder: mgr.GetEventRecorder("liqo-fabric"), Resync: f.resync, Log: log}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	runErr := mgr.Start(ctx)
	if f.cleanup {
		if err := r.Cleanup(context.Background()); err != nil {
			return errors.Join(err, runErr)
		}
	}
	if runErr != nil {
		return fmt.Errorf("running the fabric agent: %w", runErr)
	}
	return nil
}

// slimNode keeps of a Node what the agent reads (its name and pod CIDRs), so that the cache of
// every Node of a large cluster stays small (a Node's status holds its images).
func slimNode(o any) (any, error) {
	n, ok := o.(*corev1.Node)
	if !ok {
		return o, nil
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion,
		DeletionTimestamp: n.DeletionTimestamp}, Spec: corev1.NodeSpec{PodCIDR: n.Spec.PodCIDR, PodCIDRs: n.Spec.PodCIDRs}}, nil
}
