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
	var r struct {
		Error string `json:"error"`
		End   struct {
			SumReceived struct {
				Bytes         int64   `json:"bytes"`
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	var out []byte
	var err error
	// The server may not listen yet: iperf3 -J reports that in its JSON, not always in its
	// exit code, so both are retried.
	for range 30 {
		out, err = inNS(clientNS, "iperf3", "-c", serverIP, "-p", "5201", "-t", strconv.Itoa(seconds), "-J", "--connect-timeout", "1000").Output()
		r.Error = ""
		if err == nil {
			if jerr := json.Unmarshal(out, &r); jerr != nil {
				tb.Fatalf("iperf3 output: %v\n%s", jerr, out)
			}
			if r.Error == "" {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || r.Error != "" {
		tb.Fatalf("iperf3 client to %s: %v %s\n%s", serverIP, err, r.Error, out)
	}
	if r.End.SumReceived.Bytes == 0 {
		tb.Fatalf("iperf3 to %s moved nothing:\n%s", serverIP, out)
	}
	return iperfResult{bytes: r.End.SumReceived.Bytes, bitsPerSecond: r.End.SumReceived.BitsPerSecond}
}
