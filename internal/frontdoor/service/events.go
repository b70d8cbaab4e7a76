package service

import (
	"context"
	"strconv"
	"time"

	"github.com/taskflow/taskflow/internal/engine/eventlog"
)

// Event is one task state change of the lifecycle stream.
type Event = eventlog.Event

// LatestEventID is the id of the newest lifecycle event ("" when there is
// none): where a follower that wants only what comes next starts. With
// several partitions it is a cursor over their streams
// (eventlog.Reader).
func (s *Service) LatestEventID(ctx context.Context) (string, error) {
	id, err := s.events().Latest(ctx)
	if err != nil {
		return "", storeErr("", err)
	}
	return id, nil
}

// FollowEvents calls fn with every lifecycle event after the id after
// ("" = from now), blocking while there is none, until ctx ends or fn
// returns an error. It serves the process's own observers (metrics) and
// front ends that checked the caller first (the status stream answers the
// admin only: QueueStatus).
func (s *Service) FollowEvents(ctx context.Context, after string, fn func(Event) error) error {
	return s.events().Subscribe(ctx, after, fn)
}

// CheckEventID says whether id is an event id (a cursor) FollowEvents
// takes — "0", or a position per partition — without reading anything:
// for ids from clients (SSE Last-Event-ID). The error is KindInvalid.
func (s *Service) CheckEventID(id string) error {
	if _, err := s.events().Positions(id); err != nil {
		return Invalid("invalid_parameter", "after", "%s", err.Error())
	}
	return nil
}

// EventIDAt is the event id after stream entry "<t in unix ms>-0" in
// every partition's stream: FollowEvents from it yields the events written
// after t (by the writers' clocks).
func (s *Service) EventIDAt(t time.Time) string {
	return s.events().At(strconv.FormatInt(t.UnixMilli(), 10) + "-0")
}

// EventsBeyond returns a test of whether an event, as FollowEvents gave
// it, lies after the event id mark (LatestEventID, say) in its
// partition's stream. A mark that is no event id lets every event pass.
func (s *Service) EventsBeyond(mark string) func(Event) bool {
	beyond, err := s.events().Beyond(mark)
	if err != nil {
		return func(Event) bool { return true }
	}
	return beyond
}

func (s *Service) events() *eventlog.Reader { return s.st.Events() }
