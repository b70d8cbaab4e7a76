package plan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/plan/registry"
)

// CPU policies: where CPU nodes run.
const (
	// PolicyAuto runs trivial ops (take) and small inputs inline, fuses a
	// chain of CPU nodes into one pool hand-off, and offloads the rest —
	// options A, B and C, as the measurements in
	// docs/benchmarks.md say they pay.
	PolicyAuto = "auto"
	// PolicyPool hands every CPU node to the pool (as first written).
	PolicyPool = "pool"
	// PolicyInline runs every CPU node on the goroutine that readied it.
	PolicyInline = "inline"
)

// DefaultInlineMaxRows is the input size up to which a CPU node runs
// inline under PolicyAuto (option B); see docs/benchmarks.md.
const DefaultInlineMaxRows = 4096

// Config configures an Engine.
type Config struct {
	// Registry holds keys, params, endpoints and capabilities. Default:
	// the embedded registry/ files, environment "dev".
	Registry *registry.Registry
	// RedisURL, when set, is the address of every redis endpoint, in
	// place of the registry's resolver (rankd: --redis_url / REDIS_URL).
	// Default "" (use the registry).
	RedisURL string
	// KeyPrefix is put before every Redis key the ops read, so tests and
	// demos can use a namespace of their own. Default "".
	KeyPrefix string
	// CPUWorkers bounds how many CPU nodes run at once. Default GOMAXPROCS.
	CPUWorkers int
	// CPUPolicy is PolicyAuto (default), PolicyPool or PolicyInline.
	CPUPolicy string
	// InlineMaxRows is option B's threshold under PolicyAuto. Default
	// DefaultInlineMaxRows; negative disables option B.
	InlineMaxRows int
	// MaxInflight, when > 0, replaces every endpoint's policy.max_inflight:
	// the most commands one engine keeps in flight on an endpoint.
	// Default 0 (use the registry).
	MaxInflight int
	// MinRequestTimeout is the least per-call Redis timeout; an endpoint's
	// request_timeout_ms below it is raised to it (20 ms trips on a loaded
	// shared machine; request deadlines and node timeouts bound a run).
	// Default 1s.
	MinRequestTimeout time.Duration
	// RedisConns is the number of connections each redis endpoint's
	// client spreads its commands over, rounded down to a power of two (1–256).
	// Commands issued at the same time on one connection share a write:
	// fewer connections, fewer system calls per plan. Default 1.
	RedisConns int
	// FlushDelay, when > 0, lets a connection wait up to this long after
	// each write to gather more commands into the next one: less CPU per
	// command under concurrency, up to this much more latency per round
	// trip. Default 0 (write at once).
	FlushDelay time.Duration
	// ReadDeadColumns makes viewer, follow and recommendation read the
	// country of their rows even when no column of their output can reach
	// an output, expression, predicate or sort (every node reading them
	// makes new rows: follow, recommendation, media), as the reference
	// does. The answer is the same either way; skipping the dead reads
	// saves a dependent round trip per such node, but a broken user hash
	// (e.g. WRONGTYPE) then fails only the runs that use its country.
	// Default false (skip them).
	ReadDeadColumns bool
	// Logger receives the engine's diagnostics. Default: discard.
	Logger *slog.Logger
	// Now is the clock of traces and benchmarks. Default time.Now.
	Now func() time.Time
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() (Config, error) {
	if c.Registry == nil {
		r, err := registry.Default("dev")
		if err != nil {
			return c, err
		}
		c.Registry = r
	}
	if c.CPUWorkers <= 0 {
		c.CPUWorkers = runtime.GOMAXPROCS(0)
	}
	if c.CPUPolicy == "" {
		c.CPUPolicy = PolicyAuto
	}
	if c.InlineMaxRows == 0 {
		c.InlineMaxRows = DefaultInlineMaxRows
	}
	if c.MinRequestTimeout <= 0 {
		c.MinRequestTimeout = time.Second
	}
	if c.RedisConns <= 0 {
		c.RedisConns = 1
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

// Validate says what is wrong with c.
func (c Config) Validate() error {
	switch c.CPUPolicy {
	case PolicyAuto, PolicyPool, PolicyInline:
	default:
		return fmt.Errorf("plan: CPUPolicy %q: want auto, pool or inline", c.CPUPolicy)
	}
	if c.RedisURL != "" {
		if _, err := parseRedisURL(c.RedisURL); err != nil {
			return fmt.Errorf("plan: RedisURL: %w", err)
		}
	}
	if c.RedisConns > 256 {
		return errors.New("plan: RedisConns must be at most 256")
	}
	if c.FlushDelay < 0 {
		return errors.New("plan: FlushDelay must not be negative")
	}
	if c.MaxInflight < 0 {
		return errors.New("plan: MaxInflight must not be negative")
	}
	return nil
}

// Engine runs compiled plans. It is safe for concurrent use; one Engine
// per process shares Redis connections and the CPU pool.
type Engine struct {
	cfg  Config
	cat  Catalog
	pool chan struct{}

	mu  sync.Mutex
	eps map[string]*redisEndpoint
	// wg counts node goroutines, so Close can wait for the stragglers of
	// a failed run.
	wg sync.WaitGroup
}

type redisEndpoint struct {
	client rueidis.Client
	limit  *weighted // commands in flight on the endpoint
	chunk  int       // most commands in one pipeline (= the limit)
	// timeout bounds each call that has no deadline of its own.
	timeout time.Duration
}

// New builds an Engine; Redis connections open lazily.
func New(cfg Config) (*Engine, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, cat: NewCatalog(), pool: make(chan struct{}, cfg.CPUWorkers), eps: map[string]*redisEndpoint{}}, nil
}

// Registry returns the engine's registry.
func (e *Engine) Registry() *registry.Registry { return e.cfg.Registry }

// Catalog returns the engine's op catalog.
func (e *Engine) Catalog() Catalog { return e.cat }

// Config returns the engine's effective configuration.
func (e *Engine) Config() Config { return e.cfg }

// Load reads and compiles a plan file.
func (e *Engine) Load(path string) (*Compiled, error) { return Load(path, e.cfg.Registry, e.cat) }

// Compile validates a parsed plan.
func (e *Engine) Compile(p *Plan) (*Compiled, error) { return Compile(p, e.cfg.Registry, e.cat) }

// Close closes the engine's Redis clients.
func (e *Engine) Close() error {
	e.wg.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, ep := range e.eps {
		ep.client.Close()
		delete(e.eps, id)
	}
	return nil
}

// Ping checks that every redis endpoint the plan uses answers.
func (e *Engine) Ping(ctx context.Context, c *Compiled) error {
	for _, id := range c.Endpoints {
		ep, err := e.endpoint(id)
		if err != nil {
			return err
		}
		if err := ep.ping(ctx); err != nil {
			return fmt.Errorf("endpoint %s: %w", id, err)
		}
	}
	return nil
}

func (e *Engine) endpoint(id string) (*redisEndpoint, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ep := e.eps[id]; ep != nil {
		return ep, nil
	}
	def := e.cfg.Registry.Endpoints[id]
	if def == nil || def.Kind != "redis" {
		return nil, fmt.Errorf("plan: no redis endpoint %s", id)
	}
	var opt rueidis.ClientOption
	cluster := false
	if e.cfg.RedisURL != "" {
		var err error
		if opt, err = parseRedisURL(e.cfg.RedisURL); err != nil {
			return nil, err
		}
		cluster = redisconn.IsCluster(e.cfg.RedisURL)
	} else {
		opt.InitAddress = []string{def.Addr()}
	}
	timeout := time.Duration(def.Policy.RequestTimeoutMS) * time.Millisecond
	if timeout < e.cfg.MinRequestTimeout {
		timeout = e.cfg.MinRequestTimeout
	}
	if def.Policy.ConnectTimeoutMS > 0 && opt.Dialer.Timeout == 0 {
		opt.Dialer.Timeout = max(time.Duration(def.Policy.ConnectTimeoutMS)*time.Millisecond, e.cfg.MinRequestTimeout)
	}
	// The endpoint's request timeout bounds every wait for a reply; a run's
	// deadline and node timeout reach the commands through their context.
	opt.ConnWriteTimeout = timeout
	// One client per endpoint, shared by every run: commands issued at the
	// same time by concurrent nodes and runs go out in one write (automatic
	// pipelining), which is most of the CPU a plan costs here (see
	// docs/benchmarks.md). No client-side cache: a plan reads fresh data.
	opt.DisableCache = true
	// (a cluster URL gets rueidis's cluster client, which routes each key
	// to its slot's node)
	opt.ForceSingleClient = opt.Sentinel.MasterSet == "" && !cluster
	opt.ReadBufferEachConn, opt.WriteBufferEachConn = 64<<10, 64<<10
	opt.PipelineMultiplex = bits.Len(uint(e.cfg.RedisConns)) - 1
	if opt.PipelineMultiplex == 0 {
		opt.PipelineMultiplex = -1 // rueidis reads 0 as "pick for me"
	}
	opt.MaxFlushDelay = e.cfg.FlushDelay
	// A plan runs under a deadline: a read that met a broken connection is
	// retried once (on a new one), then the run fails fast.
	opt.RetryDelay = func(attempts int, _ rueidis.Completed, _ error) time.Duration {
		if attempts <= 1 {
			return 0
		}
		return -1
	}
	client, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("redis %s: %w", e.describeEndpoint(id), err)
	}
	inflight := def.Policy.MaxInflight
	if e.cfg.MaxInflight > 0 {
		inflight = e.cfg.MaxInflight
	}
	ep := &redisEndpoint{client: client, limit: newWeighted(int64(inflight)), chunk: inflight, timeout: timeout}
	e.eps[id] = ep
	return ep, nil
}

// bounded gives ctx a deadline (the endpoint's request timeout) when it
// has none. With a deadline, a call that has the connection to itself is
// written and read on the calling goroutine; without one rueidis hands
// every call to its background writer and reader goroutines for good
// (three goroutine wake-ups per round trip).
func (ep *redisEndpoint) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, ep.timeout)
}

func (ep *redisEndpoint) ping(ctx context.Context) error {
	ctx, cancel := ep.bounded(ctx)
	defer cancel()
	return ep.client.Do(ctx, ep.client.B().Ping().Build()).Error()
}

// DescribeEndpoint names where endpoint id points (a password hidden),
// for messages.
func (e *Engine) DescribeEndpoint(id string) string { return e.describeEndpoint(id) }

// describeEndpoint names where an endpoint points, for messages.
func (e *Engine) describeEndpoint(id string) string {
	if e.cfg.RedisURL != "" {
		u := e.cfg.RedisURL
		if i := strings.Index(u, "@"); i >= 0 {
			u = "redis://…" + u[i:]
		}
		return u
	}
	if d := e.cfg.Registry.Endpoints[id]; d != nil {
		return d.Addr()
	}
	return id
}

// RTT is the median time of n sequential PINGs to endpoint id: one Redis
// round trip, the unit of a plan's critical-path bound.
func (e *Engine) RTT(ctx context.Context, id string, n int) (time.Duration, error) {
	ep, err := e.endpoint(id)
	if err != nil {
		return 0, err
	}
	ds := make([]time.Duration, n)
	for i := range ds {
		t0 := time.Now()
		if err := ep.ping(ctx); err != nil {
			return 0, err
		}
		ds[i] = time.Since(t0)
	}
	slices.Sort(ds)
	return ds[n/2], nil
}

// parseRedisURL reads a Redis URL as internal/engine/redisconn does: a cluster is
// the seed's URL with the other seeds as addr parameters, or cluster=true
// (ours: rueidis does not know it, and finds a cluster by asking).
func parseRedisURL(raw string) (rueidis.ClientOption, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return rueidis.ClientOption{}, err
	}
	q := u.Query()
	if q.Has("cluster") {
		q.Del("cluster")
		u.RawQuery = q.Encode()
	}
	return rueidis.ParseURL(u.String())
}
