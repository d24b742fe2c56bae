package main

import (
	"io"
	"strings"
	"testing"
)

// TestParse: the virtual node is namespace/name; the Liqo namespace, where the cluster ID is
// read without --consumer-cluster-id, defaults to liqo and follows --liqo-namespace.
func TestParse(t *testing.T) {
	o, err := parse([]string{"--virtual-node=liqo-tenant-p/p"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.virtualNode.String() != "liqo-tenant-p/p" || o.liqoNamespace != "liqo" || o.consumerID != "" {
		t.Errorf("defaults: virtual node %s, Liqo namespace %q, consumer %q", o.virtualNode, o.liqoNamespace, o.consumerID)
	}
	o, err = parse([]string{"--virtual-node=ns/n", "--liqo-namespace=liqo-system", "--consumer-cluster-id=c"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.liqoNamespace != "liqo-system" || o.consumerID != "c" {
		t.Errorf("Liqo namespace %q, consumer %q; want liqo-system and c", o.liqoNamespace, o.consumerID)
	}
	if _, err := parse([]string{"--virtual-node=just-a-name"}, io.Discard); err == nil || !strings.Contains(err.Error(), "is not namespace/name") {
		t.Errorf("a virtual node without namespace: %v", err)
	}
}
