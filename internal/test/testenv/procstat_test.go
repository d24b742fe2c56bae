package testenv_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestProcessCPU: this process's CPU time is read under its command name, counted once when
// listed twice, grows with work, and is what Since, Total and String report.
func TestProcessCPU(t *testing.T) {
	self := os.Getpid()
	st, err := testenv.ReadProcStat(self)
	if err != nil {
		t.Fatal(err)
	}
	if st.RSSKiB <= 0 || st.Name == "" {
		t.Fatalf("own stat %+v: want a name and a resident size", st)
	}
	before := testenv.ProcessCPU{}
	before.Add("me/", []int{self, self})
	if len(before) != 1 {
		t.Fatalf("one process listed twice: %v, want one entry", before)
	}
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); { // busy work, to use CPU
	}
	after := testenv.ProcessCPU{}
	after.Add("me/", []int{self})
	used := after.Since(before)
	if got := used["me/"+st.Name]; got <= 0 || used.Total() != got {
		t.Errorf("CPU used by 300 ms of busy work: %v (total %v), want it positive and the total", got, used.Total())
	}
	if s := used.String(); !strings.HasPrefix(s, strings.Split(s, " s in all")[0]+" s in all, me/"+st.Name) {
		t.Errorf("String() = %q: want the total, then me/%s", s, st.Name)
	}
}
