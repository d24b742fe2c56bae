package main

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// bench sends n sequential GET url requests, each on a new connection (on one kept-alive
// connection when keepAlive), and prints their latency:
// `requests=<n> min_us=… p50_us=… p90_us=… p99_us=… max_us=…`. Any failed request is an error.
func bench(count, url string, keepAlive bool) error {
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 {
		return fmt.Errorf("request count %q: want a positive number", count)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: !keepAlive}}
	lat := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		resp, err := client.Get(url) //nolint:gosec,noctx // a test client: it fetches the URL it is given
		if err != nil {
			return fmt.Errorf("request %d: GET %s: %w", i+1, url, err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return fmt.Errorf("request %d: GET %s: reading the body: %w", i+1, url, err)
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("request %d: GET %s: %s", i+1, url, resp.Status)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	us := func(q float64) int64 { return lat[int(q*float64(len(lat)-1))].Microseconds() }
	fmt.Printf("requests=%d min_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d\n", n, us(0), us(0.5), us(0.9), us(0.99), us(1))
	return nil
}

// rate GETs url once and prints how fast its body came: `bytes=… seconds=… bytes_per_s=…`.
func rate(url string) error {
	start := time.Now()
	resp, err := http.Get(url) //nolint:gosec,noctx // a test client: it fetches the URL it is given
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s: reading the body: %w", url, err)
	}
	d := time.Since(start).Seconds()
	fmt.Printf("bytes=%d seconds=%.3f bytes_per_s=%.0f\n", n, d, float64(n)/d)
	return nil
}
