package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// statusStream serves GET /api/v1/queues/status/stream: a snapshot, then
// every task state change as it happens (read from the lifecycle event
// stream with a blocking XREAD: no polling while idle), fresh queue depths
// at most every StatusDebounce while tasks move, and a heartbeat comment
// every Heartbeat. A client resumes after a disconnect with Last-Event-ID.
func (s *Server) statusStream(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		s.writeError(w, r, &service.Error{Kind: service.KindUnavailable, Code: "too_many_streams",
			Message: fmt.Sprintf("this API process serves at most %d status streams at once; retry later or use another process", cap(s.streams))})
		return
	}
	rc := http.NewResponseController(w)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = r.URL.Query().Get("after")
	}
	if after == "" {
		// Take the stream position before the snapshot, so that no change
		// between the two is lost (a change may show in both: harmless).
		var err error
		if after, err = s.svc.LatestEventID(ctx); err != nil {
			s.writeError(w, r, err)
			return
		}
	} else if s.svc.CheckEventID(after) != nil {
		s.writeError(w, r, invalidEventID(after))
		return
	}
	qs, err := s.svc.QueueStatus(ctx, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(evName, id string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		var sb strings.Builder
		if id != "" {
			sb.WriteString("id: " + id + "\n")
		}
		sb.WriteString("event: " + evName + "\ndata: ")
		sb.Write(b)
		sb.WriteString("\n\n")
		if _, err := w.Write([]byte(sb.String())); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := send("snapshot", "", qs); err != nil {
		return
	}

	events := make(chan service.Event, 256)
	readErr := make(chan error, 1)
	go func() {
		readErr <- s.svc.FollowEvents(ctx, after, func(e service.Event) error {
			select {
			case events <- e:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	defer func() {
		cancel()
		<-readErr
	}()

	heartbeat := time.NewTicker(s.cfg.Heartbeat)
	defer heartbeat.Stop()
	var debounce <-chan time.Time // armed only while tasks move
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			_ = send("shutdown", "", errorDetail{Code: "shutting_down", Message: "the server is shutting down; reconnect with Last-Event-ID"})
			return
		case err := <-readErr:
			readErr <- err // for the deferred wait
			if err != nil && !errors.Is(err, context.Canceled) {
				_ = send("error", "", errorDetail{Code: "stream_interrupted", Message: "event stream read failed; reconnect with Last-Event-ID"})
			}
			return
		case e := <-events:
			if err := send("task", e.ID, e); err != nil {
				return
			}
			if debounce == nil {
				debounce = time.After(s.cfg.StatusDebounce)
			}
		case <-debounce:
			debounce = nil
			qs, err := s.svc.QueueStatus(ctx, p)
			if err != nil {
				continue
			}
			if err := send("queues", "", qs); err != nil {
				return
			}
		case <-heartbeat.C:
			if _, err := fmt.Fprintf(w, ": heartbeat %s\n\n", time.Now().UTC().Format(time.RFC3339)); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}
}
