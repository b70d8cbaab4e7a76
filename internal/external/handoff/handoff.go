// Package handoff is the watcher of the attempts handed off to the
// external path (store.Handoff): no worker holds them, so the watcher does
// what a worker does for an in-process task — it times them out, requeues
// or fails them when no live service serves their type, forwards cancel
// requests to the services and ends a cancel a service did not confirm.
// It also trims the agent streams to their retention.
package handoff

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/archive"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/protocol"
)

// Config configures a Watcher.
type Config struct {
	// WatchInterval is how often the watcher looks for handed-off
	// attempts that are due (timeouts, service-liveness checks). Default 1s.
	WatchInterval time.Duration
	// TrimInterval is how often the watcher trims every agent stream to
	// Retention (XTRIM MINID, exact): writes trim too (XADD MINID ~), but a
	// stream nobody writes to (a quiet task.dlq) would keep old entries.
	// Default 1m.
	TrimInterval time.Duration
	// Retention of the agent streams' events. Default 7 days.
	Retention time.Duration
	// ServiceGrace is the time between the liveness checks of a handed-off
	// attempt: when a check (confirmed ServiceGrace/5 later) finds no live
	// service for its type, a running attempt is requeued without
	// spending a retry and a TIMEOUT one is failed (transient) on the
	// service's behalf. Default 30s.
	ServiceGrace time.Duration
	// Logger defaults to a discarding logger.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// WithDefaults returns c with unset fields defaulted.
func (c Config) WithDefaults() Config {
	if c.WatchInterval == 0 {
		c.WatchInterval = time.Second
	}
	if c.TrimInterval == 0 {
		c.TrimInterval = time.Minute
	}
	if c.Retention == 0 {
		c.Retention = protocol.DefaultRetention
	}
	if c.ServiceGrace == 0 {
		c.ServiceGrace = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate says what is wrong with c (after WithDefaults).
func (c Config) Validate() error {
	switch {
	case c.TrimInterval <= 0:
		return fmt.Errorf("handoff: TrimInterval %s must be positive", c.TrimInterval)
	case c.WatchInterval <= 0 || c.ServiceGrace <= 0:
		return fmt.Errorf("handoff: WatchInterval %s and ServiceGrace %s must be positive", c.WatchInterval, c.ServiceGrace)
	case c.Retention <= 0:
		return fmt.Errorf("handoff: Retention %s must be positive", c.Retention)
	}
	return nil
}

// Watcher watches the handed-off attempts of one namespace.
type Watcher struct {
	st   *store.Store
	rdb  redis.UniversalClient
	ns   keyspace.Namespace
	cfg  Config
	sk   protocol.Keys
	k    keys
	pub  *protocol.Publisher
	note *notify.Notifier // nil: no notifications
	arc  *archive.Archive // nil: no archive

	mu sync.Mutex
	// suspects: handed-off attempts whose type had no live service at
	// their last check (the watcher acts at the second)
	suspects map[string]time.Time
	// nextTrim: when the watcher next trims the streams to Retention
	nextTrim time.Time
}

// New returns the watcher of st's namespace. note and arc may be nil (no
// notifications, no archive).
func New(st *store.Store, note *notify.Notifier, arc *archive.Archive, cfg Config) (*Watcher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Watcher{st: st, rdb: st.Client(), ns: st.Namespace(), cfg: cfg, sk: protocol.NewKeys(st.Namespace()),
		k: newKeys(st.Namespace()), pub: protocol.NewPublisher(st.Client(), cfg.Retention, cfg.Now),
		note: note, arc: arc, suspects: map[string]time.Time{}}, nil
}

// Run watches until ctx ends: a check of the due attempts every
// WatchInterval, and the cancel requests forwarded as they come. Errors
// of a tick are logged and the next tick tries again.
func (w *Watcher) Run(ctx context.Context) error {
	fwdDone := make(chan struct{})
	go func() { defer close(fwdDone); w.forwardCancels(ctx) }()
	defer func() { <-fwdDone }()
	t := time.NewTicker(w.cfg.WatchInterval)
	defer t.Stop()
	for {
		if _, err := w.Tick(ctx); err != nil && ctx.Err() == nil {
			w.cfg.Logger.Warn("handoff watcher", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
