// Package testwait is how a test waits for a condition that holds
// eventually when testify's require.Eventually does not fit. Until polls
// in the test's own goroutine, so the check may call require and set
// variables the test reads afterwards (require.Eventually runs its
// condition in another goroutine, where require must not fail the test);
// and it builds the failure message only after the last check, so the
// message says what that check saw. A plain wait for a condition, with a
// message fixed beforehand, uses require.Eventually.
package testwait

import (
	"testing"
	"time"
)

// Until calls check at once and then every interval until it returns
// true. When timeout passes first, it fails the test with the message
// failure returns: failure runs once, after the last check, and says what
// the test waited for and what it saw.
func Until(t testing.TB, timeout, interval time.Duration, check func() bool, failure func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !check() {
		if !time.Now().Before(deadline) {
			t.Fatalf("%s (waited %s)", failure(), timeout)
			return
		}
		time.Sleep(interval)
	}
}
