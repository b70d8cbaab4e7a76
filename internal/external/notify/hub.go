package notify

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/redisconn"
)

// Hub fans the "new notification" announcements of every process out to
// the live connections (WebSocket, SSE) of this process: one Redis
// subscription per process, whatever the number of connections. A signal
// only says "look again": each connection reads the stream after what it
// has delivered, so a missed or coalesced signal loses nothing.
type Hub struct {
	rdb     redis.UniversalClient
	channel string

	mu    sync.Mutex
	subs  map[string]map[*Subscription]struct{}
	ready chan struct{}
}

// Subscription is one live connection's wake-up signal.
type Subscription struct {
	// C receives a value (coalesced) when the session may have new
	// notifications, and once at start.
	C       chan struct{}
	session string
	hub     *Hub
}

// NewHub returns a Hub for the notifier's namespace. Call Run.
func NewHub(n *Notifier) *Hub {
	return &Hub{rdb: n.rdb, channel: n.keys.channel(), subs: map[string]map[*Subscription]struct{}{}, ready: make(chan struct{})}
}

// Run follows the announcement channel until ctx ends. After a lost
// connection it resubscribes and wakes every subscription (they re-read).
func (h *Hub) Run(ctx context.Context) error {
	once := false
	for ctx.Err() == nil {
		err := redisconn.Listen(ctx, h.rdb, h.channel, 1024, func(ok bool) {
			switch {
			case !ok:
			case !once:
				close(h.ready)
				once = true
			default:
				h.wakeAll() // resubscribed: what was announced meanwhile is re-read
			}
		}, h.wake)
		if err != nil && ctx.Err() == nil {
			select { // Redis unreachable: try again shortly
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// Ready is closed once the Hub is subscribed.
func (h *Hub) Ready() <-chan struct{} { return h.ready }

// Subscribe registers a live connection of session.
func (h *Hub) Subscribe(session string) *Subscription {
	s := &Subscription{C: make(chan struct{}, 1), session: session, hub: h}
	s.C <- struct{}{}
	h.mu.Lock()
	m := h.subs[session]
	if m == nil {
		m = map[*Subscription]struct{}{}
		h.subs[session] = m
	}
	m[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// Close unregisters the subscription.
func (s *Subscription) Close() {
	h := s.hub
	h.mu.Lock()
	if m := h.subs[s.session]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(h.subs, s.session)
		}
	}
	h.mu.Unlock()
}

func (h *Hub) wake(session string) {
	h.mu.Lock()
	for s := range h.subs[session] {
		select {
		case s.C <- struct{}{}:
		default:
		}
	}
	h.mu.Unlock()
}

func (h *Hub) wakeAll() {
	h.mu.Lock()
	for _, m := range h.subs {
		for s := range m {
			select {
			case s.C <- struct{}{}:
			default:
			}
		}
	}
	h.mu.Unlock()
}
