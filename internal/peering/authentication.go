package peering

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

// ensureAuthentication runs the handshake unless it is done: the provider's nonce, signed by
// the consumer, verified in the provider's Tenant, whose issued certificate becomes the
// consumer's Identity.
func (p *pair) ensureAuthentication(ctx context.Context) error {
	proxyURL := ""
	if p.opts.InBand {
		var err error
		if proxyURL, err = p.inBandProxyURL(ctx); err != nil {
			return err
		}
	}
	tenant := &authv1beta1.Tenant{}
	tenantKey := client.ObjectKey{Namespace: p.providerNS(), Name: string(p.consumerID)}
	err := p.provider.Client.Get(ctx, tenantKey, tenant)
	switch {
	case apierrors.IsNotFound(err):
		signed, err := p.signedNonce(ctx)
		if err != nil {
			return err
		}
		tenant = &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: tenantKey.Namespace, Name: tenantKey.Name}}
		forge.MutateTenant(tenant, string(p.consumerID), forge.TenantOptions{AuthzPolicy: authv1beta1.KeysExchange,
			Condition: authv1beta1.TenantConditionActive, PublicKey: signed.Data[consts.PublicKeySecretKey],
			Signature: signed.Data[consts.SignedNonceKey], CSR: signed.Data[consts.CSRKey], ProxyURL: proxyURL,
			PodSecurity: p.opts.PodSecurity})
		if err := p.provider.Client.Create(ctx, tenant); err != nil {
			return fmt.Errorf("creating Tenant %s on %s: %w", tenantKey, p.provider.Name, err)
		}
	case err != nil:
		return fmt.Errorf("reading Tenant %s on %s: %w", tenantKey, p.provider.Name, err)
	case tenant.Spec.ProxyURL != proxyURL:
		// In-band turned on or off, or the proxy's address moved: the provider issues the
		// identity again with the new proxy URL.
		before := tenant.DeepCopy()
		tenant.Spec.ProxyURL = proxyURL
		if err := p.provider.Client.Patch(ctx, tenant, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("setting the proxy URL %q of Tenant %s on %s: %w", proxyURL, tenantKey, p.provider.Name, err)
		}
	}
	if before := tenant.DeepCopy(); forge.SetTenantPodSecurity(tenant, p.opts.PodSecurity) {
		// The provider's controllers relabel the consumer's remote namespaces.
		if err := p.provider.Client.Patch(ctx, tenant, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("setting the Pod Security level %q of Tenant %s on %s: %w", p.opts.PodSecurity, tenantKey, p.provider.Name, err)
		}
	}
	// The Tenant's Warning Events are what a timeout says: listed every warningInterval, not at
	// every look (a LIST of the namespace's Events each time).
	var warned error
	looked := time.Now()
	err = waitFor(ctx, p.opts.PollInterval, fmt.Sprintf("Tenant %s on %s to issue the consumer's certificate", tenantKey, p.provider.Name),
		func(ctx context.Context) (bool, error) {
			if err := p.provider.Client.Get(ctx, tenantKey, tenant); err != nil {
				return false, fmt.Errorf("reading Tenant %s: %w", tenantKey, err)
			}
			if tenant.Spec.TenantCondition != "" && tenant.Spec.TenantCondition != authv1beta1.TenantConditionActive {
				return false, stop("Tenant %s on %s is %s: the provider issues no identity; set it Active", tenantKey, p.provider.Name, tenant.Spec.TenantCondition)
			}
			if tenant.Status.AuthParams != nil && len(tenant.Status.AuthParams.SignedCRT) > 0 && tenant.Status.AuthParams.ProxyURL == proxyURL {
				return true, nil
			}
			if time.Since(looked) >= warningInterval {
				looked = time.Now()
				warned = lastWarning(ctx, p.provider.Client, tenant)
			}
			return false, warned
		})
	if err != nil {
		return err
	}

	id := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: p.consumerNS(), Name: IdentityPrefix + string(p.providerID)}}
	err = p.consumer.Client.Get(ctx, client.ObjectKeyFromObject(id), id)
	switch {
	case apierrors.IsNotFound(err):
		forge.MutateIdentity(id, string(p.providerID), authv1beta1.ControlPlaneIdentityType, p.providerNS(), *tenant.Status.AuthParams)
		if err := p.consumer.Client.Create(ctx, id); err != nil {
			return fmt.Errorf("creating Identity %s on %s: %w", client.ObjectKeyFromObject(id), p.consumer.Name, err)
		}
	case err != nil:
		return fmt.Errorf("reading Identity %s on %s: %w", client.ObjectKeyFromObject(id), p.consumer.Name, err)
	case id.Spec.AuthParams.ProxyURL != proxyURL:
		before := id.DeepCopy()
		id.Spec.AuthParams.ProxyURL = proxyURL
		if err := p.consumer.Client.Patch(ctx, id, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("setting the proxy URL %q of Identity %s on %s: %w", proxyURL, client.ObjectKeyFromObject(id), p.consumer.Name, err)
		}
	}
	return waitFor(ctx, p.opts.PollInterval, fmt.Sprintf("Identity %s on %s to have its kubeconfig", client.ObjectKeyFromObject(id), p.consumer.Name),
		func(ctx context.Context) (bool, error) {
			if err := p.consumer.Client.Get(ctx, client.ObjectKeyFromObject(id), id); err != nil {
				return false, fmt.Errorf("reading Identity: %w", err)
			}
			return id.Status.KubeconfigSecretRef != nil && id.Status.KubeconfigSecretRef.Name != "", nil
		})
}

// AskNonce asks a provider for a nonce, as upstream liqoctl does: an empty, labelled nonce
// Secret in the consumer's tenant namespace, which the provider's nonce controller fills in. One
// already there is fine.
func AskNonce(ctx context.Context, c client.Client, tenantNamespace, consumerID string) error {
	s := forge.NonceRequest(tenantNamespace, consumerID)
	if err := c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("asking for a nonce in %s: %w", tenantNamespace, err)
	}
	return nil
}

// signedNonce returns the consumer's signature of the provider's nonce, asking for it when
// needed.
func (p *pair) signedNonce(ctx context.Context) (*corev1.Secret, error) {
	n := &corev1.Secret{}
	nonceKey := client.ObjectKey{Namespace: p.providerNS(), Name: consts.NonceSecret}
	if err := AskNonce(ctx, p.provider.Client, nonceKey.Namespace, string(p.consumerID)); err != nil {
		return nil, fmt.Errorf("on %s: %w", p.provider.Name, err)
	}
	err := waitFor(ctx, p.opts.PollInterval, fmt.Sprintf("the nonce %s on %s (made by its controller manager)", nonceKey, p.provider.Name),
		func(ctx context.Context) (bool, error) {
			err := p.provider.Client.Get(ctx, nonceKey, n)
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, fmt.Errorf("reading %s: %w", nonceKey, err)
			}
			return len(n.Data[consts.NonceKey]) > 0, nil
		})
	if err != nil {
		return nil, err
	}
	signed := &corev1.Secret{}
	key := client.ObjectKey{Namespace: p.consumerNS(), Name: consts.SignedNonceSecret}
	err = p.consumer.Client.Get(ctx, key, signed)
	switch {
	case apierrors.IsNotFound(err):
		signed = forge.SignedNonceRequest(key.Namespace, string(p.providerID), n.Data[consts.NonceKey])
		if err := p.consumer.Client.Create(ctx, signed); err != nil {
			return nil, fmt.Errorf("asking %s to sign the nonce (Secret %s): %w", p.consumer.Name, key, err)
		}
	case err != nil:
		return nil, fmt.Errorf("reading %s on %s: %w", key, p.consumer.Name, err)
	case string(signed.Data[consts.NonceKey]) != string(n.Data[consts.NonceKey]):
		// A stale request (the provider's nonce changed): ask again.
		if err := p.consumer.Client.Delete(ctx, signed); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("replacing the stale signed nonce %s on %s: %w", key, p.consumer.Name, err)
		}
		return p.signedNonce(ctx)
	}
	err = waitFor(ctx, p.opts.PollInterval, fmt.Sprintf("%s to sign the nonce (Secret %s)", p.consumer.Name, key),
		func(ctx context.Context) (bool, error) {
			if err := p.consumer.Client.Get(ctx, key, signed); err != nil {
				return false, fmt.Errorf("reading %s: %w", key, err)
			}
			return len(signed.Data[consts.SignedNonceKey]) > 0, nil
		})
	if err != nil {
		return nil, err
	}
	return signed, p.completeSignedNonce(ctx, signed)
}

// completeSignedNonce adds to an answer of upstream Liqo's controller manager what ours puts
// in it and upstream's leaves to liqoctl: the consumer's public key and the certificate request
// of its control-plane identity (CN the consumer's ID, O consts.ConsumerGroup), made from the
// consumer cluster's signing key as upstream liqoctl makes them. Only in memory: the key never
// leaves the consumer's Secret, and nothing of it reaches the state.
func (p *pair) completeSignedNonce(ctx context.Context, signed *corev1.Secret) error {
	if len(signed.Data[consts.PublicKeySecretKey]) > 0 && len(signed.Data[consts.CSRKey]) > 0 {
		return nil
	}
	key, err := signing.ReadClusterKey(ctx, p.consumer.Client, p.consumer.liqoNamespace())
	if err != nil {
		return fmt.Errorf("on %s, whose answer to the nonce (Secret %s/%s) has no public key or certificate request (upstream Liqo's): %w",
			p.consumer.Name, signed.Namespace, signed.Name, err)
	}
	public, err := key.EncodePublic()
	if err != nil {
		return fmt.Errorf("encoding the public key of %s: %w", p.consumer.Name, err)
	}
	csr, err := key.CSR(string(p.consumerID), consts.ConsumerGroup)
	if err != nil {
		return fmt.Errorf("the control-plane certificate request of %s: %w", p.consumer.Name, err)
	}
	signed.Data[consts.PublicKeySecretKey], signed.Data[consts.CSRKey] = public, csr
	return nil
}

// removeAuthentication deletes the consumer's Identity, the Tenant (which revokes the
// consumer's access) and the handshake's Secrets: the signed nonce, and the nonce once the
// Tenant checked against it is gone. Each may be missing (a handshake that stopped half-way).
func (p *pair) removeAuthentication(ctx context.Context) error {
	steps := []struct {
		c   Cluster
		obj client.Object
	}{
		{p.consumer, &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: p.consumerNS(), Name: IdentityPrefix + string(p.providerID)}}},
		{p.consumer, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.consumerNS(), Name: consts.SignedNonceSecret}}},
		{p.provider, &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: p.providerNS(), Name: string(p.consumerID)}}},
		{p.provider, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.providerNS(), Name: consts.NonceSecret}}},
	}
	for _, s := range steps {
		if err := deleteAndWait(ctx, s.c, s.obj, p.opts.PollInterval); err != nil {
			return err
		}
	}
	return nil
}

// warningInterval is how often a wait lists the Warning Events it would report on timeout.
const warningInterval = 2 * time.Second

// lastWarning is the latest Warning Event about obj (its controller's refusal, say), as an
// error naming its reason and note; nil when there is none, or the Events cannot be read.
func lastWarning(ctx context.Context, c client.Reader, obj client.Object) error {
	list := &eventsv1.EventList{}
	if err := c.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var last *eventsv1.Event
	for i := range list.Items {
		e := &list.Items[i]
		if e.Type != corev1.EventTypeWarning || e.Regarding.UID != obj.GetUID() {
			continue
		}
		if last == nil || eventTime(e).After(eventTime(last)) {
			last = e
		}
	}
	if last == nil {
		return nil
	}
	return fmt.Errorf("%s's last warning: %s: %s", obj.GetName(), last.Reason, last.Note)
}

// eventTime is when an Event was last seen.
func eventTime(e *eventsv1.Event) time.Time {
	if e.Series != nil {
		return e.Series.LastObservedTime.Time
	}
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.DeprecatedLastTimestamp.Time
}
