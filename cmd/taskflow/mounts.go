package main

import (
	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/config"
	"github.com/taskflow/taskflow/internal/httpapi"
	"github.com/taskflow/taskflow/internal/service"
	"github.com/taskflow/taskflow/internal/store"
)

// apiMounts lists the HTTP handlers of other packages that the API serves
// (the plan API, session notifications). Each package adds one entry.
func apiMounts(m *Main, cfg config.Config, rdb redis.UniversalClient, st *store.Store) []httpapi.Mount {
	var out []httpapi.Mount
	return out
}

// newBreakerControl returns how the operator endpoints reset/open circuit
// breakers; nil until the breaker package offers a fleet-wide control.
func newBreakerControl(st *store.Store) service.BreakerControl { return nil }
