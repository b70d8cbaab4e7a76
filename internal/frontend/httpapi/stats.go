package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/frontend/stats"
)

// statsRoutes registers the dashboard's time series.
func (s *Server) statsRoutes(add func(route)) {
	add(route{method: "GET", path: "/api/v1/stats/series", access: admin, handler: s.getSeries, doc: opDoc{
		tag: "queues", summary: "Throughput, start latency and queue depths over the last 15 minutes",
		description: "Columns, oldest step first, one entry per step (step_seconds, default 5) of the window: tasks enqueued (created), " +
			"completed, failed (attempts that ended FAILED or TIMEOUT) and dead-lettered per step; start latency p50/p99 in ms (from becoming PENDING " +
			"to ACTIVE; a task submitted with a delay counts its delay; null where no task started); queue depths, the step's last sample " +
			"(null where none was taken). Every API process keeps the window in memory from the lifecycle event stream, rebuilt from the stream " +
			"when it starts (as far back as the capped stream reaches); depth samples start when the process does.",
		responses: map[int]string{200: "Series"}}})
}

func (s *Server) getSeries(w http.ResponseWriter, _ *http.Request, _ identity.Principal) {
	writeJSON(w, http.StatusOK, s.series.Series(s.cfg.Clock.Now()))
}

// follow feeds the transition/duration metrics and the series window from
// the lifecycle event streams until ctx ends. The window is first rebuilt
// from the events of its span; the metrics count only the events after
// each stream's newest entry when the process started (a position, not a
// time: the events carry their writers' clocks). After a Redis hiccup it
// resumes where it stopped.
func (s *Server) follow(ctx context.Context) error {
	var mark string // the newest entry of each stream at start
	for {
		var err error
		if mark, err = s.svc.LatestEventID(ctx); err == nil {
			break
		}
		if !sleepCtx(ctx, time.Second) {
			return nil
		}
	}
	beyond := s.svc.EventsBeyond(mark)
	after := s.svc.EventIDAt(s.cfg.Clock.Now().Add(-s.series.Span()))
	for {
		err := s.svc.FollowEvents(ctx, after, func(e service.Event) error {
			s.series.Observe(stats.Event{TaskID: e.TaskID, From: e.From, To: e.To, At: e.At})
			// per event: with several partitions, one stream's event past
			// the mark says nothing of the next one's, from another stream
			if beyond(e) {
				s.engine.observe(e)
			}
			after = e.ID
			return nil
		})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, context.Canceled) && !sleepCtx(ctx, time.Second) {
			return nil
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// sampleDepth records the queue depths into the window once per step.
func (s *Server) sampleDepth(ctx context.Context) {
	t := time.NewTicker(s.series.Step())
	defer t.Stop()
	admin := identity.Principal{Admin: true}
	for {
		qctx, cancel := context.WithTimeout(ctx, s.series.Step())
		qs, err := s.svc.QueueStatus(qctx, admin)
		cancel()
		if err == nil {
			s.series.ObserveDepth(s.cfg.Clock.Now(), qs.Queues.ByName())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
