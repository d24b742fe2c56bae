// Package gatewaytest holds the checks the GatewayServer and GatewayClient controllers' tests
// share.
package gatewaytest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Warning finds a Warning Event with reason about obj whose note contains text, and says what it
// found instead when there is none.
func Warning(ctx context.Context, c client.Client, obj client.Object, reason, text string) error {
	list := &eventsv1.EventList{}
	if err := c.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return fmt.Errorf("listing events: %w", err)
	}
	for _, e := range list.Items {
		if e.Regarding.Name == obj.GetName() && e.Type == corev1.EventTypeWarning && e.Reason == reason && strings.Contains(e.Note, text) {
			return nil
		}
	}
	return fmt.Errorf("no Warning %s event about %s containing %q among %d events", reason, obj.GetName(), text, len(list.Items))
}

// CheckKeyPair checks that a gateway's key Secret holds a WireGuard private key and its public
// key.
func CheckKeyPair(t *testing.T, secret *corev1.Secret) {
	t.Helper()
	priv, err := wgtypes.NewKey(secret.Data["privateKey"])
	if err != nil {
		t.Fatalf("private key: %v", err)
	}
	if pub := priv.PublicKey(); string(pub[:]) != string(secret.Data["publicKey"]) {
		t.Error("publicKey does not match privateKey")
	}
}
