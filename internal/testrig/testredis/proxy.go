package testredis

import (
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a Redis so that a test can break the
// link in the two ways a network does: Cut stops carrying bytes in both
// directions without closing anything (a partition: no reset reaches
// either side) until it is healed; StallOn swallows a connection's
// commands from the first one containing a pattern on (a Redis that stops
// answering at a point the test chooses). Close ends every connection; it
// also runs at the test's cleanup.
type Proxy struct {
	ln       net.Listener
	upstream string
	cut      atomic.Bool
	mu       sync.Mutex
	pattern  []byte
	stalled  chan struct{}
	once     sync.Once
	conns    []net.Conn
	wg       sync.WaitGroup
	closed   sync.Once
}

// NewProxy starts a proxy to upstream (host:port).
func NewProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testredis: proxy: %v", err)
	}
	p := &Proxy{ln: ln, upstream: upstream, stalled: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); p.pipe(up, c, true) }()
			go func() { defer p.wg.Done(); p.pipe(c, up, false) }()
		}
	}()
	t.Cleanup(p.Close)
	return p
}

// URL is the proxy's redis:// URL.
func (p *Proxy) URL() string { return "redis://" + p.ln.Addr().String() + "/0" }

// Cut stops (true) or resumes (false) carrying bytes both ways.
func (p *Proxy) Cut(cut bool) { p.cut.Store(cut) }

// StallOn makes a connection swallow its commands from the first write
// that contains pattern on; the channel closes when that first happens.
func (p *Proxy) StallOn(pattern string) <-chan struct{} {
	p.mu.Lock()
	p.pattern = []byte(pattern)
	p.mu.Unlock()
	return p.stalled
}

// pipe copies src to dst, holding what it read while the link is cut;
// commands (fromClient) are checked against the stall pattern.
func (p *Proxy) pipe(dst io.Writer, src io.Reader, fromClient bool) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		for n > 0 && p.cut.Load() {
			time.Sleep(5 * time.Millisecond)
		}
		if n > 0 && fromClient {
			p.mu.Lock()
			pat := p.pattern
			p.mu.Unlock()
			if len(pat) > 0 && bytes.Contains(buf[:n], pat) {
				p.once.Do(func() { close(p.stalled) })
				_, _ = io.Copy(io.Discard, src)
				return
			}
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Close ends the proxy and every connection through it, and waits for its
// goroutines. Safe to call more than once.
func (p *Proxy) Close() {
	p.closed.Do(func() {
		_ = p.ln.Close()
		p.cut.Store(false)
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
}
