package service

import (
	"context"

	"github.com/taskflow/taskflow/internal/lifecycle"
)

// Event is one task state change of the lifecycle stream.
type Event = lifecycle.Event

// LatestEventID is the id of the newest lifecycle event ("" when there is
// none): where a follower that wants only what comes next starts.
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

func (s *Service) events() *lifecycle.Reader {
	return lifecycle.NewReader(s.st.Client(), s.st.EventStreamKey())
}
