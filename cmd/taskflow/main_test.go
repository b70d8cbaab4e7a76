package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain: the commands stop everything they start (dev servers, workers,
// the embedded Redis, clients) before they return.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
