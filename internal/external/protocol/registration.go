package protocol

import (
	"strconv"
	"strings"
)

// ConcurrencyFieldPrefix starts the field of a service's registration
// hash (Keys.Service) in which one instance publishes how many tasks it
// runs at once: "concurrency:<consumer>" = FormatConcurrency(n, until).
// Each instance writes its own field on every heartbeat, so the
// dispatcher can add up the instances of a service that share the hash;
// a field past its until is an instance that stopped and is not counted.
const ConcurrencyFieldPrefix = "concurrency:"

// FormatConcurrency is the value of an instance's concurrency field: n
// tasks at once, valid until untilMS (unix ms; the registration's expiry).
func FormatConcurrency(n int, untilMS int64) string {
	return strconv.Itoa(n) + " " + strconv.FormatInt(untilMS, 10)
}

// ParseConcurrency reads FormatConcurrency's value; ok is false for
// anything else (or n < 1).
func ParseConcurrency(v string) (n int, untilMS int64, ok bool) {
	a, b, found := strings.Cut(v, " ")
	if !found {
		return 0, 0, false
	}
	n, err1 := strconv.Atoi(a)
	untilMS, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || n < 1 {
		return 0, 0, false
	}
	return n, untilMS, true
}
