package main

import (
	"errors"
	"flag"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/peerkit/terraform-provider-liqo/controllers/grantenforcement"
	"github.com/peerkit/terraform-provider-liqo/controllers/podplacement"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity"
	"github.com/peerkit/terraform-provider-liqo/internal/webhookserver"
)

// webhookOptions say whether and how the admission webhooks are served.
type webhookOptions struct {
	service     string
	url         string
	bindAddress string
	// certificateSecret is the namespace/name of a TLS Secret someone else keeps; empty: the
	// manager provisions its own.
	certificateSecret string
}

func (w *webhookOptions) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&w.service, "webhook-service", "",
		"namespace/name of the Service (port 443) that routes to the webhook port, for a manager running in the cluster; enables the admission webhooks (pod placement, grant enforcement)")
	fs.StringVar(&w.url, "webhook-url", "",
		"https base URL the API server calls the webhooks at instead, e.g. https://127.0.0.1:9443, for a manager running as a local process next to its API server")
	fs.StringVar(&w.bindAddress, "webhook-bind-address", webhookserver.DefaultBindAddress, "address the webhook server listens on")
	fs.StringVar(&w.certificateSecret, "webhook-certificate-secret", "",
		"namespace/name of a kubernetes.io/tls Secret someone else keeps (e.g. cert-manager: tls.crt, tls.key and ca.crt, the caBundle of the webhook configurations) "+
			"that the webhooks serve with; the manager reads it and never writes it (default: the manager provisions "+
			consts.LiqoNamespace+"/"+webhookserver.DefaultSecretName+" with a CA of its own)")
}

func (w *webhookOptions) validate() error {
	if w.service != "" && w.url != "" {
		return errors.New("--webhook-service and --webhook-url are exclusive: the API server reaches the webhooks one way")
	}
	if w.service != "" {
		if _, err := webhookserver.ParseService(w.service); err != nil {
			return fmt.Errorf("--webhook-service: %w", err)
		}
	}
	if w.certificateSecret != "" {
		if _, err := webhookserver.ParseService(w.certificateSecret); err != nil {
			return fmt.Errorf("--webhook-certificate-secret %q is not namespace/name of a Secret, e.g. liqo/liqo-webhook-tls", w.certificateSecret)
		}
	}
	return nil
}

// setupWebhooks serves the admission webhooks when --webhook-service or --webhook-url is set:
// the pod-placement webhook (consumer side) and the grant-enforcement webhook (provider side).
// Without either, the manager serves none (pods of offloaded namespaces are not shaped, and
// the consumers' ShadowPods are limited only by RBAC).
func setupWebhooks(mgr ctrl.Manager, w webhookOptions, liqoNS string, podSecurity podsecurity.Policy) error {
	if w.service == "" && w.url == "" {
		mgr.GetLogger().Info("admission webhooks disabled: set --webhook-service or --webhook-url to serve them")
		return nil
	}
	opts := webhookserver.Options{URL: w.url, BindAddress: w.bindAddress, SecretNamespace: liqoNS}
	if w.service != "" {
		svc, err := webhookserver.ParseService(w.service)
		if err != nil {
			return fmt.Errorf("--webhook-service: %w", err)
		}
		opts.Service = svc
	}
	if w.certificateSecret != "" {
		ref, err := webhookserver.ParseService(w.certificateSecret)
		if err != nil {
			return fmt.Errorf("--webhook-certificate-secret: %w", err)
		}
		opts.SecretNamespace, opts.SecretName, opts.SecretProvided = ref.Namespace, ref.Name, true
	}
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("creating the webhook server's client: %w", err)
	}
	ws, err := webhookserver.New(direct, opts)
	if err != nil {
		return err
	}
	decoder := admission.NewDecoder(mgr.GetScheme())
	ws.Register(podplacement.Path, &podplacement.Handler{Client: mgr.GetClient(), Decoder: decoder})
	ws.AddMutating(podplacement.Configuration, podplacement.Path, podplacement.Webhook(liqoNS))
	ws.Register(grantenforcement.Path, &grantenforcement.Handler{Client: mgr.GetClient(), Decoder: decoder, PodSecurity: podSecurity})
	for _, wh := range grantenforcement.Webhooks() {
		ws.AddValidating(grantenforcement.Configuration, grantenforcement.Path, wh)
	}
	if err := mgr.Add(ws); err != nil {
		return fmt.Errorf("adding the webhook server: %w", err)
	}
	if err := mgr.AddReadyzCheck("webhooks", ws.StartedChecker()); err != nil {
		return fmt.Errorf("adding the webhook readiness check: %w", err)
	}
	return nil
}
