package outcome

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/protocol"
)

// One script per step of an attempt's marker (see once.go).
var (
	//go:embed scripts/claim.lua
	claimLua    string
	claimScript = redis.NewScript(claimLua)

	//go:embed scripts/publish_dlq.lua
	publishDLQLua    string
	publishDLQScript = redis.NewScript(publishDLQLua)

	//go:embed scripts/finish.lua
	finishLua    string
	finishScript = redis.NewScript(finishLua)

	//go:embed scripts/held.lua
	heldLua string

	//go:embed scripts/claim_batch.lua
	claimBatchLua    string
	claimBatchScript = redis.NewScript(heldLua + "\n" + claimBatchLua)

	//go:embed scripts/apply_batch.lua
	applyBatchLua    string
	applyBatchScript = redis.NewScript(notify.WriteLua + "\n" + applyBatchLua)

	//go:embed scripts/settle.lua
	settleLua    string
	settleScript = redis.NewScript(store.LuaLib() + "\n" + notify.WriteLua + "\n" + heldLua + "\n" + settleLua)
)

// publishDLQ appends the task.dlq e of the outcome oc unless it was
// published before; it reports whether it wrote.
func (o *Consumer) publishDLQ(ctx context.Context, oc outcome, e protocol.Event) (bool, error) {
	args := []any{oc.entry, int64(markerTTL / time.Second), protocol.MinID(o.cfg.Now(), o.cfg.Retention)}
	args = append(args, e.Values()...)
	err := publishDLQScript.Run(ctx, o.rdb, []string{oc.marker, o.sk.DLQ()}, args...).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("outcome: publish %s to %s: %w", e.Type, o.sk.DLQ(), err)
	}
	return true, nil
}
