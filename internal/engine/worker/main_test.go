package worker

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	if os.Getenv(limitChildEnv) != "" {
		os.Exit(runLimitChild())
	}
	goleak.VerifyTestMain(m,
		// go-redis redials a dead node (the failover test kills one) on a
		// goroutine that sleeps a second between tries and ends at the
		// first one after its client closed
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
