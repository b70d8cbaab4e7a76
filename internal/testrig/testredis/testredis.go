// Package testredis gives tests a real Redis: a client on the shared server
// with a key namespace of the test's own (so tests run in parallel and never
// touch each other's keys), or a redis-server process of the test's own on a
// free port for tests that kill or restart it. A missing server fails the
// test loudly; it is never skipped.
package testredis

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/testrig/testwait"
)

// URL is the shared test server: TASKFLOW_TEST_REDIS_URL, or the local
// default redis://127.0.0.1:6379/0. It may name a Redis Cluster in the
// form taskflow reads (redis://h1:p1?addr=h2:p2&addr=h3:p3): then Client
// is a cluster client and the suite runs against the cluster (make
// test-cluster).
func URL() string {
	if u := os.Getenv("TASKFLOW_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// Namespace returns a key prefix unique to this test run and test.
func Namespace(t testing.TB) string {
	return "tftest:" + uuid.NewString()[:8]
}

// Client connects to the shared server (or cluster) and returns the client
// and a fresh namespace. At cleanup it deletes the namespace's keys (and
// only those) and closes the client.
func Client(t testing.TB) (redis.UniversalClient, string) {
	t.Helper()
	c := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		t.Fatalf("testredis: no Redis at %s (start one, or set TASKFLOW_TEST_REDIS_URL): %v", URL(), err)
	}
	ns := Namespace(t)
	t.Cleanup(func() {
		DeletePrefix(context.Background(), c, ns)
		_ = c.Close()
	})
	return c, ns
}

// IsCluster reports whether the shared test server is a Redis Cluster
// (the URL has addr parameters; redisconn reads it the same way, and this
// package cannot import it: redisconn's tests use this one).
func IsCluster() bool {
	u, err := url.Parse(URL())
	return err == nil && u.Query().Has("addr")
}

// open builds a client of the shared server or cluster.
func open(t testing.TB) redis.UniversalClient {
	t.Helper()
	c, err := Open()
	if err != nil {
		t.Fatalf("testredis: bad TASKFLOW_TEST_REDIS_URL: %v", err)
	}
	return c
}

// Open builds a client of the shared server or cluster, for a test's child
// process that has no testing.TB. The caller closes it.
func Open() (redis.UniversalClient, error) {
	if IsCluster() {
		co, err := redis.ParseClusterURL(URL())
		if err != nil {
			return nil, err
		}
		return redis.NewClusterClient(co), nil
	}
	opt, err := redis.ParseURL(URL())
	if err != nil {
		return nil, err
	}
	return redis.NewClient(opt), nil
}

// Keys lists the keys matching pattern, on every master of a cluster.
func Keys(ctx context.Context, c redis.UniversalClient, pattern string) ([]string, error) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return scanKeys(ctx, c, pattern)
	}
	var mu sync.Mutex
	var out []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		ks, err := scanKeys(ctx, m, pattern)
		mu.Lock()
		out = append(out, ks...)
		mu.Unlock()
		return err
	})
	return out, err
}

func scanKeys(ctx context.Context, c redis.Cmdable, pattern string) ([]string, error) {
	var out []string
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	return out, iter.Err()
}

// Subscribers counts the subscriptions to channel, plain and shard ones
// (taskflow subscribes to shard channels on a cluster), on every master.
func Subscribers(ctx context.Context, c redis.UniversalClient, channel string) (int64, error) {
	count := func(ctx context.Context, n redis.Cmdable) (int64, error) {
		plain, err := n.PubSubNumSub(ctx, channel).Result()
		if err != nil {
			return 0, err
		}
		shard, err := n.PubSubShardNumSub(ctx, channel).Result()
		if err != nil {
			return 0, err
		}
		return plain[channel] + shard[channel], nil
	}
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return count(ctx, c)
	}
	var total atomic.Int64
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := count(ctx, m)
		total.Add(n)
		return err
	})
	return total.Load(), err
}

// Another is one more client of the shared server or cluster (a second
// process's connection), closed at cleanup.
func Another(t testing.TB) redis.UniversalClient {
	t.Helper()
	c := open(t)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// DeletePrefix deletes every key that contains prefix (keys are written as
// prefix or {prefix}... so a MATCH on *prefix* finds both forms); on a
// cluster, on every master.
func DeletePrefix(ctx context.Context, c redis.UniversalClient, prefix string) {
	if cc, ok := c.(*redis.ClusterClient); ok {
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			deleteOn(ctx, m, prefix)
			return nil
		})
		return
	}
	deleteOn(ctx, c, prefix)
}

func deleteOn(ctx context.Context, c redis.Cmdable, prefix string) {
	iter := c.Scan(ctx, 0, "*"+prefix+"*", 1000).Iterator()
	var batch []string
	flush := func() {
		// one UNLINK per key: keys without the namespace's hash tag (the
		// plans' demo data) sit in other slots, and a cluster node refuses
		// a command spanning slots
		p := c.Pipeline()
		for _, k := range batch {
			p.Unlink(ctx, k)
		}
		_, _ = p.Exec(ctx)
		batch = batch[:0]
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
}

// Server is a redis-server process owned by one test.
type Server struct {
	Addr string
	Port int
	dir  string
	cmd  *exec.Cmd
	t    testing.TB
}

var portSeq atomic.Int32

// freePort asks the kernel for a free loopback port.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testredis: no free port: %v", err)
	}
	defer l.Close()
	portSeq.Add(1)
	return l.Addr().(*net.TCPAddr).Port
}

// StartServer starts a redis-server of the test's own on a free port; it is
// stopped at cleanup. extraArgs are passed to redis-server (e.g. "--appendonly", "yes").
func StartServer(t testing.TB, extraArgs ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("testredis: redis-server not on PATH (install Debian's redis-server): %v", err)
	}
	s := &Server{dir: t.TempDir(), t: t}
	s.Port = freePort(t)
	s.Addr = "127.0.0.1:" + strconv.Itoa(s.Port)
	s.start(bin, extraArgs)
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start(bin string, extraArgs []string) {
	// A port free when chosen may be taken before redis-server binds it, and
	// a cluster node also binds port+10000 (its bus), which nothing checked:
	// such a start is retried on other ports.
	for try := 1; ; try++ {
		exited, log := s.launch(bin, extraArgs)
		if !exited {
			return
		}
		if !strings.Contains(log, "Address already in use") || try == 5 {
			s.t.Fatalf("testredis: redis-server on %s did not come up: %s", s.Addr, strings.TrimSpace(log))
		}
		s.Port = freePort(s.t)
		s.Addr = "127.0.0.1:" + strconv.Itoa(s.Port)
	}
}

// launch starts redis-server and waits until it answers (exited false) or
// exits (exited true, with its log).
func (s *Server) launch(bin string, extraArgs []string) (exited bool, log string) {
	args := append([]string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--logfile", filepath.Join(s.dir, "redis.log")}, extraArgs...)
	s.cmd = exec.Command(bin, args...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("testredis: start redis-server: %v", err)
	}
	done := make(chan struct{})
	cmd := s.cmd
	go func() { _ = cmd.Wait(); close(done) }()
	readLog := func() string {
		b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
		return string(b)
	}
	up := false
	testwait.Until(s.t, 10*time.Second, 20*time.Millisecond, func() bool {
		select {
		case <-done:
			exited = true
			return true
		default:
		}
		up = answers(s.Addr)
		return up
	}, func() string {
		return fmt.Sprintf("testredis: redis-server on %s did not come up: %s", s.Addr, strings.TrimSpace(readLog()))
	})
	if exited {
		log := readLog()
		_ = os.Remove(filepath.Join(s.dir, "redis.log")) // the next try's log starts empty
		return true, log
	}
	return false, ""
}

// answers reports whether the server at addr answers PING. A connection
// alone is not enough: the kernel accepts one on a listening port before
// redis-server has finished starting — and a cluster node that then fails
// to bind its bus port exits without ever answering.
func answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 7)
	n, _ := io.ReadFull(c, buf)
	return string(buf[:n]) == "+PONG\r\n"
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return fmt.Sprintf("redis://%s/0", s.Addr) }

// Client returns a client of this server, closed at cleanup.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop kills the server (SIGKILL: the data is gone, as after a crash).
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_, _ = s.cmd.Process.Wait()
		s.cmd = nil
	}
}

// Pause stops the server's process (SIGSTOP): connections stay open and
// the kernel still accepts new ones, but nothing is answered until Resume
// — a stalled Redis, as a long fork, swap or a frozen VM makes one.
func (s *Server) Pause() {
	if s.cmd != nil && s.cmd.Process != nil {
		if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			s.t.Fatalf("testredis: pause: %v", err)
		}
	}
}

// Resume lets a paused server go on (SIGCONT).
func (s *Server) Resume() {
	if s.cmd != nil && s.cmd.Process != nil {
		if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			s.t.Fatalf("testredis: resume: %v", err)
		}
	}
}

// Restart stops the server and starts it again on the same port.
func (s *Server) Restart(extraArgs ...string) {
	s.Stop()
	bin, _ := exec.LookPath("redis-server")
	s.start(bin, extraArgs)
}
