package notify

import (
	"context"
	"errors"
	"time"
)

// FollowBatch is how many notifications Follow reads per round.
const FollowBatch = 100

// Follow delivers the session's notifications after `after` with send,
// then every new one as hub signals, marking each batch read once sent,
// until ctx ends or send or ping fails. ping is called every pingEvery
// while nothing arrives (keep-alive of the connection); delivered, when
// set, is called with each batch sent.
func (s *Notifier) Follow(ctx context.Context, hub *Hub, sessionID, after string, pingEvery time.Duration,
	send func(Notification) error, ping func() error, delivered func([]Notification)) error {
	if hub == nil {
		return errors.New("notify: no Hub to follow")
	}
	sub := hub.Subscribe(sessionID)
	defer sub.Close()
	t := time.NewTicker(pingEvery)
	defer t.Stop()
	for { // a new subscription is signalled once: the first round reads what is there
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if err := ping(); err != nil {
				return err
			}
			continue
		case <-sub.C:
		}
		for {
			ns, err := s.List(ctx, sessionID, after, FollowBatch)
			if err != nil {
				return err
			}
			for _, n := range ns {
				if err := send(n); err != nil {
					return err
				}
				after = n.ID
			}
			if len(ns) > 0 {
				if delivered != nil {
					delivered(ns)
				}
				if err := s.MarkRead(ctx, sessionID, after); err != nil {
					return err
				}
			}
			if len(ns) < FollowBatch {
				break
			}
		}
	}
}

// ValidCursor reports whether s is a position to read after: a
// notification id (1700000000000-0) or "0" (from the start).
func ValidCursor(s string) bool { return s == "0" || validID(s) }
