package e2e

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"
)

// iperfResult is what the iperf3 client measured.
type iperfResult struct {
	bytes         int64
	bitsPerSecond float64
}

// iperf runs an iperf3 server in netns serverNS on serverIP and a TCP client in clientNS for
// seconds, and returns the received totals.
func iperf(tb testing.TB, serverNS, clientNS, serverIP string, seconds int) iperfResult {
	tb.Helper()
	srv := inNS(serverNS, "iperf3", "-s", "-1", "-B", serverIP, "-p", "5201")
	if err := srv.Start(); err != nil {
		tb.Fatalf("starting iperf3 server: %v", err)
	}
	tb.Cleanup(func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
	})
	var out []byte
	var err error
	for range 20 {
		out, err = inNS(clientNS, "iperf3", "-c", serverIP, "-p", "5201", "-t", strconv.Itoa(seconds), "-J", "--connect-timeout", "1000").Output()
		if err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		tb.Fatalf("iperf3 client to %s: %v\n%s", serverIP, err, out)
	}
	var r struct {
		End struct {
			SumReceived struct {
				Bytes         int64   `json:"bytes"`
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		tb.Fatalf("iperf3 output: %v\n%s", err, out)
	}
	if r.End.SumReceived.Bytes == 0 {
		tb.Fatalf("iperf3 to %s moved nothing:\n%s", serverIP, out)
	}
	return iperfResult{bytes: r.End.SumReceived.Bytes, bitsPerSecond: r.End.SumReceived.BitsPerSecond}
}
