package service

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Health is GET /health answer.
type Health struct {
	Status     string           `json:"status" openapi:"enum=healthy|unhealthy"`
	Components HealthComponents `json:"components"`
	Timestamp  time.Time        `json:"timestamp"`
}

// HealthComponents are the parts health looks at.
type HealthComponents struct {
	Redis bool `json:"redis"`
	// Workers is true when at least one worker heartbeated recently.
	Workers bool `json:"workers" jsonschema:"at least one live worker"`
	// WorkerCount is the number of live workers.
	WorkerCount int `json:"worker_count"`
	// CircuitBreaker is the worst state per dependency across workers
	// (OPEN > HALF_OPEN > CLOSED).
	CircuitBreaker map[string]string `json:"circuit_breaker" openapi:"enum=CLOSED|HALF_OPEN|OPEN" jsonschema:"the worst state per dependency"`
}

// Health checks Redis and the workers; anyone may ask.
func (s *Service) Health(ctx context.Context) Health {
	h := Health{Status: "healthy", Timestamp: s.cfg.Now().UTC(), Components: HealthComponents{CircuitBreaker: map[string]string{}}}
	h.Components.Redis = s.Ready(ctx) == nil
	if h.Components.Redis {
		if ws, err := s.workers(ctx); err == nil {
			h.Components.WorkerCount = len(ws)
			h.Components.Workers = len(ws) > 0
			for _, w := range ws {
				for dep, st := range w.Breakers {
					if rank(st) > rank(h.Components.CircuitBreaker[dep]) {
						h.Components.CircuitBreaker[dep] = st
					}
				}
			}
		}
	}
	if !h.Components.Redis || !h.Components.Workers {
		h.Status = "unhealthy"
	}
	return h
}

func rank(state string) int {
	switch strings.ToUpper(state) {
	case "OPEN":
		return 3
	case "HALF_OPEN":
		return 2
	case "CLOSED":
		return 1
	}
	return 0
}

// Ready reports whether the API can serve: Redis answers.
func (s *Service) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second) // within a load balancer's probe timeout
	defer cancel()
	// a write in the namespace's slot, not a PING: a replica or a cluster
	// node holding another slot answers PING and fails every transition
	if err := s.st.Probe(ctx); err != nil {
		return Unavailable(fmt.Errorf("redis: %w", err))
	}
	return nil
}
