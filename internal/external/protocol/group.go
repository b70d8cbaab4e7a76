package protocol

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRetention is how long events stay in a stream: the original design keeps the
// DLQ 7 days; we keep every stream as long, trimmed by XADD MINID.
const DefaultRetention = 7 * 24 * time.Hour

// Publisher appends events to streams, trimming entries older than the
// retention with XADD ... MINID ~ on every write (no separate trim job).
type Publisher struct {
	rdb       redis.UniversalClient
	retention time.Duration
	now       func() time.Time
}

// NewPublisher returns a Publisher; retention ≤ 0 means DefaultRetention,
// now nil means time.Now.
func NewPublisher(rdb redis.UniversalClient, retention time.Duration, now func() time.Time) *Publisher {
	if retention <= 0 {
		retention = DefaultRetention
	}
	if now == nil {
		now = time.Now
	}
	return &Publisher{rdb: rdb, retention: retention, now: now}
}

// Publish appends e to stream and returns the entry id.
func (p *Publisher) Publish(ctx context.Context, stream string, e Event) (string, error) {
	id, err := p.rdb.XAdd(ctx, p.Args(stream, e)).Result()
	if err != nil {
		return "", fmt.Errorf("stream: publish %s to %s: %w", e.Type, stream, err)
	}
	return id, nil
}

// Args returns the XADD arguments Publish sends (for pipelines).
func (p *Publisher) Args(stream string, e Event) *redis.XAddArgs {
	return &redis.XAddArgs{
		Stream: stream,
		MinID:  MinID(p.now(), p.retention),
		Approx: true,
		Values: e.Values(),
	}
}

// MinID is the stream id below which entries are older than retention.
func MinID(now time.Time, retention time.Duration) string {
	ms := now.Add(-retention).UnixMilli()
	if ms < 0 {
		ms = 0
	}
	return strconv.FormatInt(ms, 10) + "-0"
}

// EnsureGroup creates group on stream (and the stream) if missing. start is
// where a new group begins: "0" to read everything kept, "$" for new
// entries only.
func EnsureGroup(ctx context.Context, rdb redis.UniversalClient, stream, group, start string) error {
	err := rdb.XGroupCreateMkStream(ctx, stream, group, start).Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("stream: create group %s on %s: %w", group, stream, err)
	}
	return nil
}

// Message is one entry read from a stream: its event, or the reason it
// could not be decoded (a poison entry the reader should acknowledge and
// set aside, never retry forever).
type Message struct {
	Stream string
	ID     string
	Event  Event
	Err    error
}

func toMessages(stream string, xs []redis.XMessage) []Message {
	out := make([]Message, 0, len(xs))
	for _, x := range xs {
		m := Message{Stream: stream, ID: x.ID}
		if x.Values == nil { // deleted while pending
			m.Err = fieldErr("entry", "deleted from the stream")
		} else {
			m.Event, m.Err = Decode(x.ID, x.Values)
		}
		out = append(out, m)
	}
	return out
}

// ReadGroup reads up to count new entries for consumer of group from
// streams, blocking up to block (0: return at once when nothing is there).
// A timeout with nothing read returns (nil, nil).
func ReadGroup(ctx context.Context, rdb redis.UniversalClient, group, consumer string, streams []string, count int64, block time.Duration) ([]Message, error) {
	args := make([]string, 0, 2*len(streams))
	args = append(args, streams...)
	for range streams {
		args = append(args, ">")
	}
	if block <= 0 {
		block = -1 // no BLOCK argument
	}
	res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: group, Consumer: consumer, Streams: args, Count: count, Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stream: XREADGROUP %s: %w", group, err)
	}
	var out []Message
	for _, s := range res {
		out = append(out, toMessages(s.Stream, s.Messages)...)
	}
	return out, nil
}

// Ack acknowledges ids of stream for group.
func Ack(ctx context.Context, rdb redis.UniversalClient, stream, group string, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := rdb.XAck(ctx, stream, group, ids...).Err(); err != nil {
		return fmt.Errorf("stream: XACK %s %s: %w", stream, group, err)
	}
	return nil
}

// AutoClaim takes over up to count entries of stream that other consumers
// of group have held unacknowledged for at least minIdle (a dead consumer's
// work), scanning from start ("0-0" for the beginning). It returns the
// claimed messages and the cursor to continue from ("0-0" when the scan is
// complete).
func AutoClaim(ctx context.Context, rdb redis.UniversalClient, stream, group, consumer string, minIdle time.Duration, start string, count int64) ([]Message, string, error) {
	xs, next, err := rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: stream, Group: group, Consumer: consumer, MinIdle: minIdle, Start: start, Count: count,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, "0-0", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("stream: XAUTOCLAIM %s %s: %w", stream, group, err)
	}
	return toMessages(stream, xs), next, nil
}

// Touch resets the idle time of entries consumer holds (XCLAIM ... JUSTID
// to itself): the heartbeat that keeps a live consumer's long-running work
// from being claimed by AutoClaim.
func Touch(ctx context.Context, rdb redis.UniversalClient, stream, group, consumer string, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	err := rdb.XClaimJustID(ctx, &redis.XClaimArgs{
		Stream: stream, Group: group, Consumer: consumer, MinIdle: 0, Messages: ids,
	}).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("stream: XCLAIM (touch) %s %s: %w", stream, group, err)
	}
	return nil
}

// Lag is how many entries of stream group has not been delivered yet
// (counted as Groups counts them, at most LagCountLimit), plus how many
// it has delivered and not seen acknowledged.
func Lag(ctx context.Context, rdb redis.UniversalClient, stream, group string) (lag, pending int64, err error) {
	gs, err := Groups(ctx, rdb, stream, time.Now())
	if err != nil {
		return 0, 0, err
	}
	for _, g := range gs {
		if g.Name == group {
			return g.Lag, g.Pending, nil
		}
	}
	return 0, 0, nil
}

// LagCountLimit bounds the entries Groups counts past a group's last
// delivered one: a group further behind reports this many with
// LagAtLeast set.
const LagCountLimit = 1000

// Group is one consumer group of a stream: what an operator acts on.
type Group struct {
	Name      string `json:"group"`
	Consumers int64  `json:"consumers"`
	// Pending: delivered to a consumer and not acknowledged.
	Pending int64 `json:"pending" jsonschema:"delivered to a consumer and not acknowledged"`
	// OldestPendingSeconds: how long ago the oldest pending entry was
	// published (its id's time); nil when none is pending.
	OldestPendingSeconds *float64 `json:"oldest_pending_seconds" jsonschema:"how long ago the oldest pending entry was published; null: none pending"`
	// Lag: entries of the stream after the group's last delivered one,
	// counted in the stream (never XINFO GROUPS' lag, which counts from
	// the stream's entries-added counter: after an XDEL or a trim it can
	// be null or count entries that are gone, and Redis-compatible servers
	// such as the embedded one of taskflow dev report the stream's length
	// there). At most LagCountLimit, then LagAtLeast.
	Lag int64 `json:"lag" jsonschema:"entries in the stream not delivered to the group yet (counted; at most 1000, then lag_at_least)"`
	// LagAtLeast: the count stopped at LagCountLimit.
	LagAtLeast bool `json:"lag_at_least,omitempty" jsonschema:"more entries wait than were counted (lag is a lower bound)"`
	// LastDeliveredID is the newest entry the group handed to a consumer.
	LastDeliveredID string `json:"last_delivered_id"`
}

// Groups lists stream's consumer groups by name; none when the stream does
// not exist yet. now dates the oldest pending entries.
func Groups(ctx context.Context, rdb redis.UniversalClient, stream string, now time.Time) ([]Group, error) {
	gs, err := rdb.XInfoGroups(ctx, stream).Result()
	if err != nil {
		if strings.Contains(err.Error(), "no such key") {
			return []Group{}, nil
		}
		return nil, fmt.Errorf("stream: XINFO GROUPS %s: %w", stream, err)
	}
	out := make([]Group, 0, len(gs))
	if len(gs) == 0 {
		return out, nil
	}
	// the newest entry: a group that was handed it has nothing waiting,
	// which spares the count in the usual case
	newest, err := rdb.XRevRangeN(ctx, stream, "+", "-", 1).Result()
	if err != nil {
		return nil, fmt.Errorf("stream: XREVRANGE %s: %w", stream, err)
	}
	for _, g := range gs {
		grp := Group{Name: g.Name, Consumers: g.Consumers, Pending: g.Pending, LastDeliveredID: g.LastDeliveredID}
		if len(newest) > 0 && compareIDs(newest[0].ID, g.LastDeliveredID) > 0 {
			xs, err := rdb.XRangeN(ctx, stream, "("+g.LastDeliveredID, "+", LagCountLimit+1).Result()
			if err != nil {
				return nil, fmt.Errorf("stream: XRANGE %s: %w", stream, err)
			}
			grp.Lag = int64(min(len(xs), LagCountLimit))
			grp.LagAtLeast = len(xs) > LagCountLimit
		}
		if g.Pending > 0 {
			ps, err := rdb.XPending(ctx, stream, g.Name).Result()
			if err != nil {
				return nil, fmt.Errorf("stream: XPENDING %s %s: %w", stream, g.Name, err)
			}
			if ms, ok := idMillis(ps.Lower); ok {
				age := max(0, now.Sub(time.UnixMilli(ms)).Seconds())
				age = float64(int64(age*10)) / 10
				grp.OldestPendingSeconds = &age
			}
		}
		out = append(out, grp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// idMillis is the time part of a stream entry id ("ms-seq").
func idMillis(id string) (int64, bool) {
	ms, _, _ := strings.Cut(id, "-")
	v, err := strconv.ParseInt(ms, 10, 64)
	return v, err == nil
}

// compareIDs orders two stream entry ids: -1, 0 or 1.
func compareIDs(a, b string) int {
	am, as, _ := strings.Cut(a, "-")
	bm, bs, _ := strings.Cut(b, "-")
	for _, p := range [][2]string{{am, bm}, {as, bs}} {
		x, _ := strconv.ParseUint(p[0], 10, 64)
		y, _ := strconv.ParseUint(p[1], 10, 64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
	}
	return 0
}
