package httpapi

import (
	"net/http"
	"sync"
	"time"
)

// Reasons a request's credentials were refused (taskflow_auth_failures_total).
const (
	authNoCredentials = "no_credentials"
	authMalformed     = "malformed_header"
	authInvalidToken  = "invalid_token"
)

var authReasons = []string{authNoCredentials, authMalformed, authInvalidToken}

// authLogEvery is how often at most a refused credential is logged per
// reason; the ones in between are counted in the next line.
const authLogEvery = 10 * time.Second

// authLog rate-limits the log lines of refused credentials: one per reason
// per authLogEvery, saying how many were refused since the last.
type authLog struct {
	mu     sync.Mutex
	last   map[string]time.Time
	missed map[string]int
}

// authFailed counts a refused request and logs it (rate-limited) with its
// client address, method and path: never the token, nor anything made
// from it.
func (s *Server) authFailed(r *http.Request, reason string) {
	s.metrics.authFailures.WithLabelValues(reason).Inc()
	if reason == authNoCredentials {
		return // a client that sent nothing is not trying a secret
	}
	now := time.Now()
	s.authLog.mu.Lock()
	if s.authLog.last == nil {
		s.authLog.last, s.authLog.missed = map[string]time.Time{}, map[string]int{}
	}
	if now.Sub(s.authLog.last[reason]) < authLogEvery {
		s.authLog.missed[reason]++
		s.authLog.mu.Unlock()
		return
	}
	missed := s.authLog.missed[reason]
	s.authLog.last[reason], s.authLog.missed[reason] = now, 0
	s.authLog.mu.Unlock()
	s.log.WarnContext(r.Context(), "refused credentials", "reason", reason, "client", s.clientAddr(r),
		"method", r.Method, "path", r.URL.Path, "more_since_last_line", missed)
}
