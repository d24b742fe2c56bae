package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/grantenforcement"
	"github.com/peerkit/terraform-provider-liqo/controllers/podplacement"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestWebhookFlags: --webhook-service and --webhook-url are exclusive, a Service is
// namespace/name.
func TestWebhookFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--webhook-service", "liqo/liqo-webhook", "--webhook-url", "https://127.0.0.1:9443"},
		{"--webhook-service", "liqo-webhook"},
	} {
		if _, err := parse(args, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	o, err := parse([]string{"--webhook-service", "liqo/liqo-webhook"}, io.Discard)
	if err != nil || o.webhooks.service != "liqo/liqo-webhook" || o.webhooks.bindAddress != ":9443" {
		t.Errorf("parse: %+v %v", o, err)
	}
}

// TestRunServesWebhooks: started with --webhook-url, the manager becomes ready only once its
// webhook server serves; it registers both configurations, and the API server shapes a pod of
// an offloaded namespace through it.
func TestRunServesWebhooks(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "a"})
	cl := env.Cluster("a")
	probe, hook := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--kubeconfig", cl.KubeconfigPath, "--cluster-id", "cl-a",
			"--health-probe-bind-address", probe, "--metrics-bind-address", "0",
			"--webhook-url", "https://" + hook, "--webhook-bind-address", hook}, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with %v", err)
		}
	}()
	err := waitReady(t.Context(), probe, time.Minute, exitedFrom(done))
	if err != nil {
		t.Fatalf("not ready: %v", err)
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := cl.Client.Get(t.Context(), client.ObjectKey{Name: podplacement.Configuration}, mwc); err != nil ||
		len(mwc.Webhooks) != 1 || !strings.HasPrefix(*mwc.Webhooks[0].ClientConfig.URL, "https://"+hook+"/") {
		t.Errorf("MutatingWebhookConfiguration %s: %+v %v", podplacement.Configuration, mwc.Webhooks, err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := cl.Client.Get(t.Context(), client.ObjectKey{Name: grantenforcement.Configuration}, vwc); err != nil || len(vwc.Webhooks) != 2 {
		t.Errorf("ValidatingWebhookConfiguration %s: %+v %v", grantenforcement.Configuration, vwc.Webhooks, err)
	}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{consts.SchedulingEnabledLabel: "true"}}},
		&offv1beta1.NamespaceOffloading{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: consts.NamespaceOffloadingName},
			Spec: offv1beta1.NamespaceOffloadingSpec{PodOffloadingStrategy: offv1beta1.RemotePodOffloadingStrategyType}},
	} {
		if err := cl.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if err := cl.Client.Create(ctx, pod, client.DryRunAll); err != nil {
			return false, nil //nolint:nilerr // the cache may not show the NamespaceOffloading yet
		}
		return slices.Contains(pod.Spec.Tolerations, podplacement.Toleration), nil
	})
	if err != nil {
		t.Errorf("a pod of a Remote namespace was not shaped: %v", err)
	}
}
