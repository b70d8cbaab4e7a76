package rungroup_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test ends with no goroutine of the group left behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
