package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KWOKNodeAnnotation marks the nodes the test bed's KWOK manages.
const KWOKNodeAnnotation = "kwok.x-k8s.io/node"

// kwokStages are the KWOK stage files build.sh copies next to the kwok binary.
var kwokStages = []string{"node-initialize.yaml", "node-heartbeat-with-lease.yaml", "pod-ready.yaml", "pod-complete.yaml", "pod-delete.yaml"}

// NodeOptions describes one KWOK node.
type NodeOptions struct {
	// Name of the Node. Required.
	Name string
	// CPU, Memory and Pods are the node's capacity (and allocatable), as quantities.
	// Defaults: 8 CPUs, 32Gi, 110 pods.
	CPU, Memory, Pods string
	// Labels are added to the standard ones (type=kwok, kubernetes.io/hostname, kubernetes.io/os).
	Labels map[string]string
	// Taints are set on the node; pods must tolerate them.
	Taints []corev1.Taint
	// PodCIDR is the node's spec.podCIDR: KWOK gives the node's pods addresses from it, from
	// its .1 on. Default: none, and the node's pods take addresses from the cluster's PodCIDR.
	PodCIDR string
}

func (n NodeOptions) node() (*corev1.Node, error) {
	capacity := corev1.ResourceList{}
	for name, q := range map[corev1.ResourceName]string{
		corev1.ResourceCPU: orDefault(n.CPU, "8"), corev1.ResourceMemory: orDefault(n.Memory, "32Gi"), corev1.ResourcePods: orDefault(n.Pods, "110"),
	} {
		v, err := resource.ParseQuantity(q)
		if err != nil {
			return nil, fmt.Errorf("node %s: %s %q is not a quantity: %w", n.Name, name, q, err)
		}
		capacity[name] = v
	}
	if n.PodCIDR != "" {
		if _, _, err := net.ParseCIDR(n.PodCIDR); err != nil {
			return nil, fmt.Errorf("node %s: pod CIDR %q: %w", n.Name, n.PodCIDR, err)
		}
	}
	labels := map[string]string{"type": "kwok", corev1.LabelHostname: n.Name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}
	for k, v := range n.Labels {
		labels[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels, Annotations: map[string]string{KWOKNodeAnnotation: "fake"}},
		Spec:       corev1.NodeSpec{Taints: n.Taints, PodCIDR: n.PodCIDR},
		Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// kwokOptions is kwok's own configuration in the test bed. kwok applies its defaults only when
// no KwokConfiguration is given, so every option whose default matters is spelled out (without
// enableDebuggingHandlers, the kubelet endpoint answers logs and exec with 405).
const kwokOptions = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  enableDebuggingHandlers: true
  enableProfilingHandler: true
  enableContentionProfiling: false
  podPlayStageParallelism: 32
  nodePlayStageParallelism: 8
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
`

// podReadyAgainStage plays a kubelet's status sync that kwok's own stages lack: a running pod
// whose Ready condition someone else turned False (the node lifecycle controller does so when
// the node's lease lapses, as it does while the API server is away) is Ready again. Without it,
// a pod that kwok made Ready once stays NotReady for good after any API-server outage.
const podReadyAgainStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready-again
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values:
      - 'True'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
`

// startKWOK runs kwok for the cluster's annotated nodes, creates the nodes and waits until they
// are Ready. kwok serves the kubelet endpoint of its nodes on 127.0.0.1 at a free port; extra
// are more flags.
func (c *Cluster) startKWOK(ctx context.Context, binDir, podCIDR string, nodes []NodeOptions, extra ...string) error {
	for attempt := 1; ; attempt++ {
		p, err := c.runKWOK(binDir, podCIDR, extra)
		if err != nil {
			return err
		}
		c.procs = append(c.procs, p)
		if attempt == 1 {
			for _, n := range nodes {
				node, err := n.node()
				if err != nil {
					return err
				}
				if err := c.Client.Create(ctx, node); err != nil {
					return fmt.Errorf("cluster %s: creating KWOK node %s: %w", c.Name, n.Name, err)
				}
			}
		}
		err = c.waitFor(ctx, "KWOK nodes to be Ready", func(ctx context.Context) (bool, error) {
			for _, n := range nodes {
				node := &corev1.Node{}
				if err := c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil {
					return false, fmt.Errorf("getting node %s: %w", n.Name, err)
				}
				if !nodeReady(node) {
					return false, nil
				}
			}
			return true, nil
		})
		var exited *exitedError
		if err == nil || !errors.As(err, &exited) || exited.name != "kwok" || attempt == 3 {
			return err
		}
		// KWOK ended while starting (its port, free a moment before, taken by another test's
		// process in the meantime): again, on another port.
		c.procs = c.procs[:len(c.procs)-1]
		_ = p.stop(time.Second)
	}
}

// runKWOK starts KWOK for the cluster's fake nodes, serving their kubelet API on a free port.
func (c *Cluster) runKWOK(binDir, podCIDR string, extra []string) (*process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + c.KubeconfigPath,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KWOKNodeAnnotation + "=fake",
		"--cidr=" + podCIDR,
		"--node-ip=127.0.0.1",
		"--node-port=" + strconv.Itoa(port),
		"--server-address=127.0.0.1:" + strconv.Itoa(port),
	}
	for _, s := range kwokStages {
		args = append(args, "--config="+filepath.Join(binDir, "kwok-stages", s))
	}
	// KWOK stands for the kubelets of all the cluster's nodes, which work in parallel; its
	// default of 4 pod stages at a time would make it the bottleneck of every burst of pods.
	options := filepath.Join(c.Dir, "kwok-options.yaml")
	if err := os.WriteFile(options, []byte(kwokOptions), 0o600); err != nil {
		return nil, fmt.Errorf("cluster %s: writing %s: %w", c.Name, options, err)
	}
	args = append(args, "--config="+options)
	readyAgain := filepath.Join(c.Dir, "kwok-pod-ready-again.yaml")
	if err := os.WriteFile(readyAgain, []byte(podReadyAgainStage), 0o600); err != nil {
		return nil, fmt.Errorf("cluster %s: writing %s: %w", c.Name, readyAgain, err)
	}
	args = append(args, "--config="+readyAgain)
	args = append(args, extra...)
	return startProcess("kwok", filepath.Join(c.Dir, "logs"), filepath.Join(binDir, "kwok"), args...)
}

func nodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
