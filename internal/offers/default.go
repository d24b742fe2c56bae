package offers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// ParseSpec decodes an Offer's spec from JSON (the chart's defaultOffer.spec, as the manager's
// --default-offer flag gives it), strictly: an unknown field is an error. It validates it.
func ParseSpec(data string) (*marketv1alpha1.OfferSpec, error) {
	spec := &marketv1alpha1.OfferSpec{}
	dec := json.NewDecoder(bytes.NewReader([]byte(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(spec); err != nil {
		return nil, fmt.Errorf("decoding the offer's spec: %w", err)
	}
	if err := Validate(spec); err != nil {
		return nil, err
	}
	return spec, nil
}

// EnsureDefault makes the provider's default offer, the Offer name in namespace (the Liqo
// namespace) with spec, labelled as the controller manager's own; with a nil spec, it makes
// none. Either way, another default offer the manager made before (under another name) is
// deleted, so that taking the offer out of the chart's values withdraws it.
func EnsureDefault(ctx context.Context, c client.Client, namespace, name string, spec *marketv1alpha1.OfferSpec) error {
	list := &marketv1alpha1.OfferList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{consts.ManagedByLabel: consts.ManagedByControllerManager}); err != nil {
		return fmt.Errorf("listing the default offers in %s: %w", namespace, err)
	}
	for i := range list.Items {
		o := &list.Items[i]
		if spec != nil && o.Name == name || o.Labels[consts.OfferOriginLabel] != "" {
			continue
		}
		if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("withdrawing the former default offer %s/%s: %w", namespace, o.Name, err)
		}
	}
	if spec == nil {
		return nil
	}
	o := &marketv1alpha1.Offer{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if _, err := controllerutil.CreateOrPatch(ctx, c, o, func() error {
		if o.Labels == nil {
			o.Labels = map[string]string{}
		}
		o.Labels[consts.ManagedByLabel] = consts.ManagedByControllerManager
		forge.MutateOffer(o, spec)
		return nil
	}); err != nil {
		return fmt.Errorf("ensuring the default offer %s/%s: %w", namespace, name, err)
	}
	return nil
}
