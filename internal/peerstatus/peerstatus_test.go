package peerstatus_test

import (
	"testing"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/peerstatus"
)

func TestSummary(t *testing.T) {
	c := func(typ corev1beta1.ConditionType, s corev1beta1.ConditionStatusType) corev1beta1.Condition {
		return corev1beta1.Condition{Type: typ, Status: s}
	}
	const (
		conf = corev1beta1.NetworkConfigurationStatusCondition
		gwc  = corev1beta1.NetworkGatewayClientStatusCondition
		conn = corev1beta1.NetworkConnectionStatusCondition
	)
	for _, tc := range []struct {
		name  string
		conds []corev1beta1.Condition
		want  corev1beta1.ConditionStatusType
	}{
		{"nothing", nil, corev1beta1.ConditionStatusNone},
		{"tunnel up", []corev1beta1.Condition{c(conf, "Ready"), c(gwc, "Ready"), c(conn, "Established")}, corev1beta1.ConditionStatusEstablished},
		{"every part ready", []corev1beta1.Condition{c(conf, "Ready"), c(gwc, "Ready")}, corev1beta1.ConditionStatusReady},
		{"configuration pending", []corev1beta1.Condition{c(conf, "Pending"), c(conn, "Established")}, corev1beta1.ConditionStatusPending},
		{"tunnel error over pending", []corev1beta1.Condition{c(conf, "Pending"), c(conn, "Error")}, corev1beta1.ConditionStatusError},
		{"some not ready", []corev1beta1.Condition{c(conf, "SomeNotReady"), c(conn, "Pending")}, corev1beta1.ConditionStatusSomeNotReady},
		{"not ready over some", []corev1beta1.Condition{c(conf, "SomeNotReady"), c(conn, "NotReady")}, corev1beta1.ConditionStatusNotReady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := peerstatus.Summary(tc.conds); got != tc.want {
				t.Errorf("Summary(%v) = %s, want %s", tc.conds, got, tc.want)
			}
		})
	}
}

func TestConditionsOf(t *testing.T) {
	m := corev1beta1.Module{Conditions: []corev1beta1.Condition{
		{Type: corev1beta1.AuthTenantStatusCondition, Status: "Error"},
		{Type: corev1beta1.AuthIdentityControlPlaneStatusCondition, Status: "Established"},
	}}
	got := peerstatus.ConditionsOf(m, corev1beta1.AuthIdentityControlPlaneStatusCondition)
	if len(got) != 1 || got[0].Status != "Established" {
		t.Errorf("ConditionsOf(identity) = %v", got)
	}
	if got := peerstatus.ConditionsOf(m, corev1beta1.OffloadingNodeStatusCondition); got != nil {
		t.Errorf("ConditionsOf(a type not there) = %v, want none", got)
	}
}
