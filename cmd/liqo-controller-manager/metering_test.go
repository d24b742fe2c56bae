package main

import (
	"io"
	"testing"
	"time"
)

// TestMeteringIntervalFlag: contracts are metered every 30s unless --contract-metering-interval
// says otherwise; a non-positive interval is refused when the metering is set up.
func TestMeteringIntervalFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{{nil, 30 * time.Second}, {[]string{"--contract-metering-interval=5s"}, 5 * time.Second}} {
		o, err := parse(tc.args, io.Discard)
		if err != nil {
			t.Fatalf("parse(%v): %v", tc.args, err)
		}
		if o.metering.interval != tc.want {
			t.Errorf("parse(%v): interval %v, want %v", tc.args, o.metering.interval, tc.want)
		}
	}
	o, err := parse([]string{"--contract-metering-interval=0s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := setupMetering(nil, o); err == nil {
		t.Error("--contract-metering-interval=0s: set up, want refused")
	}
}
