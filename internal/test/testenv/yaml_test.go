package testenv_test

import (
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestSplitYAML: empty and comment-only documents are dropped, the others kept in order.
func TestSplitYAML(t *testing.T) {
	docs, err := testenv.SplitYAML([]byte("# only a comment\n---\na: 1\n---\n\n---\n# header\nb: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 {
		t.Fatalf("got %d documents %q, want 2", len(docs), docs)
	}
	if string(docs[0]) != "a: 1\n" {
		t.Errorf("first document %q, want %q", docs[0], "a: 1\n")
	}
}
