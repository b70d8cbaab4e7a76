package ratelimit

import (
	"context"
	"fmt"
	"strings"
)

// MaxSubjectLen bounds a subject (it is part of a Redis key).
const MaxSubjectLen = 200

// AcquireFor takes one grant from subject's own window: at most Limit
// grants per Interval for each subject (e.g. each client address), shared
// by every process of the namespace. Errors as Acquire.
func (l *Limiter) AcquireFor(ctx context.Context, subject string) error {
	if subject == "" || len(subject) > MaxSubjectLen || strings.ContainsAny(subject, "{}\x00") {
		return fmt.Errorf("ratelimit: subject %q must be 1..%d bytes without braces", subject, MaxSubjectLen)
	}
	return l.acquire(ctx, subjectWindow(l.cfg.Namespace, l.cfg.Name, subject))
}
