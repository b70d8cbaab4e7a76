package outcome

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/stream"
)

//go:embed scripts/publish_once.lua
var publishOnceLua string

var publishOnceScript = redis.NewScript(publishOnceLua)

// publishOnce appends e to streamKey unless an event was published under
// marker before (within markerTTL); it reports whether it wrote.
func (o *Consumer) publishOnce(ctx context.Context, marker, streamKey string, e stream.Event) (bool, error) {
	args := []any{int64(markerTTL / time.Second), stream.MinID(o.cfg.Now(), o.cfg.Retention)}
	args = append(args, e.Values()...)
	err := publishOnceScript.Run(ctx, o.rdb, []string{marker, streamKey}, args...).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("outcome: publish %s to %s: %w", e.Type, streamKey, err)
	}
	return true, nil
}
