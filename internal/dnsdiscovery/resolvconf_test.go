package dnsdiscovery

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSystemNameservers(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "resolv.conf")
	content := "# a comment\nsearch example.com\nnameserver 10.0.0.53\nnameserver  fd00::53\n" +
		"nameserver fe80::1%eth0\nnameserver not-an-address\noptions ndots:5\nnameserver\n"
	if err := os.WriteFile(conf, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := SystemNameservers(conf)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"10.0.0.53:53", "[fd00::53]:53", "[fe80::1%eth0]:53"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	empty := filepath.Join(dir, "empty.conf")
	if err := os.WriteFile(empty, []byte("search example.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := SystemNameservers(empty); err == nil || !strings.Contains(err.Error(), "names no nameserver; set nameserver") {
		t.Errorf("no nameserver: %v", err)
	}
	if _, err := SystemNameservers(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "set nameserver") {
		t.Errorf("no file: %v", err)
	}
}
