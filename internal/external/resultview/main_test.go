package resultview

import (
	"testing"

	"go.uber.org/goleak"
)

// The answers are tested through the service and the HTTP API
// (internal/frontend/httpapi's results_test.go), which apply the ownership rule.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
