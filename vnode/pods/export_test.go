package pods

import "time"

// SetTokenRefresh makes origin tokens be requested again after d, until restore is called.
func SetTokenRefresh(d time.Duration) (restore func()) {
	old := tokenRefreshAfter
	tokenRefreshAfter = func(time.Duration) time.Duration { return d }
	return func() { tokenRefreshAfter = old }
}
