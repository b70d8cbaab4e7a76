// Package devredis serves an embedded, in-memory Redis-compatible server
// (miniredis) for `taskflow dev` when no REDIS_URL is given, so the product
// runs on a machine with nothing else installed. Nothing it holds survives
// the process. Keys expire on the wall clock (ClockTTL), as on a real Redis.
// It is slow next to Redis (Lua especially): never benchmark against it.
package devredis

import (
	"fmt"

	"github.com/alicebob/miniredis/v2"
)

// Server is a running embedded server.
type Server struct {
	m *miniredis.Miniredis
}

// Start listens on a free loopback port and serves until Close.
func Start() (*Server, error) { return StartAt("127.0.0.1:0") }

// StartAt listens on addr and serves until Close.
func StartAt(addr string) (*Server, error) {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.StartAddr(addr); err != nil {
		return nil, fmt.Errorf("devredis: start embedded Redis on %s: %w", addr, err)
	}
	return &Server{m: m}, nil
}

// StartPreferring listens on addr, or on a free loopback port when addr
// cannot be had (taken by another process); moved says which happened.
func StartPreferring(addr string) (s *Server, moved bool, err error) {
	s, err = StartAt(addr)
	if err == nil {
		return s, false, nil
	}
	s, ferr := Start()
	if ferr != nil {
		return nil, false, fmt.Errorf("%w; and on a free port: %w", err, ferr)
	}
	return s, true, nil
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return s.m.Addr() }

// URL is the redis:// URL of the server.
func (s *Server) URL() string { return "redis://" + s.m.Addr() + "/0" }

// Close stops the server; its data is gone. Safe to call twice.
func (s *Server) Close() {
	if s != nil && s.m != nil {
		s.m.Close()
	}
}
