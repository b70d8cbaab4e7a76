package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/service"
	"github.com/taskflow/taskflow/internal/testredis"
)

func TestBreakerCommands(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	ctl := service.NewRedisBreakerControl(rdb, ns, nil)
	b := setup(t, setupOpts{breakers: ctl})

	// No worker listens: the operator is told nothing changed.
	r := b.do("POST", "/api/v1/workers/reset-circuit-breaker", adminKey, map[string]any{"dependency": "openrouter"})
	require.Equal(t, http.StatusConflict, r.code, string(r.raw))
	require.Equal(t, "breaker_control_unavailable", r.errCode())

	// A worker listening on the channel receives each command.
	ctx := context.Background()
	sub := rdb.Subscribe(ctx, ctl.Channel())
	defer sub.Close()
	_, err := sub.Receive(ctx) // subscription confirmed
	require.NoError(t, err)
	msgs := sub.Channel()

	r = b.do("POST", "/api/v1/workers/open-circuit-breaker/", adminKey, map[string]any{"dependency": "openrouter", "duration_seconds": 30})
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, "OPEN", r.body["state"])
	var cmd service.BreakerCommand
	select {
	case m := <-msgs:
		require.NoError(t, json.Unmarshal([]byte(m.Payload), &cmd))
	case <-time.After(5 * time.Second):
		t.Fatal("no command published")
	}
	require.Equal(t, "open", cmd.Op)
	require.Equal(t, "openrouter", cmd.Dependency)
	require.InDelta(t, time.Now().Add(30*time.Second).UnixMilli(), cmd.Until, 5000)

	r = b.do("POST", "/api/v1/workers/reset-circuit-breaker", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	cmd = service.BreakerCommand{}
	select {
	case m := <-msgs:
		require.NoError(t, json.Unmarshal([]byte(m.Payload), &cmd))
	case <-time.After(5 * time.Second):
		t.Fatal("no command published")
	}
	require.Equal(t, service.BreakerCommand{Op: "reset", At: cmd.At}, cmd)
}
