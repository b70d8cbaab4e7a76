package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/taskflow/taskflow/internal/auth"
	"github.com/taskflow/taskflow/internal/service"
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

func (s *Server) getSeries(w http.ResponseWriter, _ *http.Request, _ auth.Principal) {
	writeJSON(w, http.StatusOK, s.series.Series(s.cfg.Clock.Now()))
}

// follow feeds the transition/duration metrics and the series window from
// the lifecycle event stream until ctx ends. The window is first rebuilt
// from the events of its span; the metrics count only the events after the
// stream's newest entry when the process started (a position, not a time:
// the events carry their writers' clocks). After a Redis hiccup it resumes
// where it stopped.
func (s *Server) follow(ctx context.Context) error {
	var mark string // the newest entry at start; "" = the stream was empty
	for {
		var err error
		if mark, err = s.svc.LatestEventID(ctx); err == nil {
			break
		}
		if !sleepCtx(ctx, time.Second) {
			return nil
		}
	}
	after := fmt.Sprintf("%d-0", s.cfg.Clock.Now().Add(-s.series.Span()).UnixMilli())
	for {
		err := s.svc.FollowEvents(ctx, after, func(e service.Event) error {
			s.series.Observe(e)
			if mark == "" || entryAfter(e.ID, mark) {
				mark = ""
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

// entryAfter reports whether the event id ("<ms>-<seq>.<index>") lies in
// a stream entry after entry ("<ms>-<seq>").
func entryAfter(eventID, entry string) bool {
	e, _, _ := strings.Cut(eventID, ".")
	ems, eseq := splitEntry(e)
	mms, mseq := splitEntry(entry)
	return ems > mms || (ems == mms && eseq > mseq)
}

func splitEntry(id string) (ms, seq uint64) {
	a, b, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(a, 10, 64)
	seq, _ = strconv.ParseUint(b, 10, 64)
	return ms, seq
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
	admin := auth.Principal{Admin: true}
	for {
		qctx, cancel := context.WithTimeout(ctx, s.series.Step())
		qs, err := s.svc.QueueStatus(qctx, admin)
		cancel()
		if err == nil {
			s.series.ObserveDepth(s.cfg.Clock.Now(), qs.Queues)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
