package provider

import "time"

// SetConsumerIdentityClockOffset moves the clock with which liqo_consumer_identity decides that
// a certificate is due for renewal (tests only: the provider runs in the test's process).
func SetConsumerIdentityClockOffset(d time.Duration) {
	consumerIdentityClockOffset.Store(int64(d))
}
