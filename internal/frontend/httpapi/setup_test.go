package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/cron"
	"github.com/taskflow/taskflow/internal/engine/depend"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/ratelimit"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/archive"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/external/resultview"
	"github.com/taskflow/taskflow/internal/frontdoor/audit"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/frontend/httpapi"
	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/plan/planapi"
	"github.com/taskflow/taskflow/internal/tasktypes"
	"github.com/taskflow/taskflow/internal/tasktypes/builtin"
	"github.com/taskflow/taskflow/internal/tasktypes/summarize"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

func TestMain(m *testing.M) {
	// rueidis's cluster client (the plan engine, against a Redis Cluster)
	// refreshes its slot map on a goroutine that ends by itself after Close
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}

const adminKey = "test-admin-key-0123456789abcdef"

// testBundle is one API server on a real Redis namespace of its own.
type testBundle struct {
	t     testing.TB
	srv   *httptest.Server
	st    *store.Store
	svc   *service.Service
	api   *httpapi.Server
	ns    string
	clock *clock.Fake // the store's clock
	cron  *cron.Cron  // the service's schedules (tests fire them with Tick)
	deps  *depend.Graph
	note  *notify.Notifier
	arc   *archive.Archive // with setupOpts.archive
	plans string           // the plan directory (holds testPlan as "follows")
}

// testPlan is a plan of two nodes reading the namespace's demo data (none
// unless a test seeds it: then it answers no candidates).
const testPlan = `{"schema_version":1,"plan_name":"follows","nodes":[
 {"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}},
 {"node_id":"f","op":"core::follow","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":3}}],"outputs":["f"]}`

type setupOpts struct {
	open       bool
	maxBody    int64
	maxContent int
	heartbeat  time.Duration
	breakers   service.BreakerControl
	// breakerControl: breaker commands go over Redis pub/sub in the
	// bundle's namespace (service.RedisBreakerControl)
	breakerControl bool
	sessionLimit   int    // sessions per minute per client address (0: unlimited)
	clientIPHeader string // httpapi.Config.ClientIPHeader
	mounts         []httpapi.Mount
	server         *testredis.Server // a Redis of the test's own instead of the shared one
	middleware     func(http.Handler) http.Handler
	maxStreams     int
	logger         *slog.Logger // the server's (default slog.Default())
	archive        bool         // results read back from a PostgreSQL archive of the test's own
	resultClock    clock.Clock  // the results' clock (ETAs); default the store's
	onDelivered    func(via string, n service.Notification, at time.Time)

	// notesOnResponses: the route middleware is
	// httpapi.NotificationsOnResponses on the bundle's service
	notesOnResponses bool
}

func setup(t testing.TB, o ...setupOpts) *testBundle {
	t.Helper()
	var opt setupOpts
	if len(o) > 0 {
		opt = o[0]
	}
	rdb, ns := testredis.Client(t)
	if opt.server != nil {
		// as the processes build theirs (redisconn): deadlines bound reads
		rdb = redis.NewClient(&redis.Options{Addr: opt.server.Addr, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = rdb.Close() })
	}
	clk := clock.NewFake(time.Now())
	st, err := store.New(rdb, store.Config{Namespace: ns, Clock: clk})
	require.NoError(t, err)
	key := adminKey
	if opt.open {
		key = ""
	}
	au, err := auth.New(rdb, auth.Config{Namespace: keyspace.MustParse(ns), AdminKey: key, Open: opt.open})
	require.NoError(t, err)
	b := &testBundle{t: t, st: st, ns: ns, clock: clk}
	if opt.breakerControl {
		opt.breakers = service.NewRedisBreakerControl(rdb, keyspace.MustParse(ns), nil)
	}
	b.cron, b.deps = cron.New(st, cron.Config{Clock: clk}), depend.New(st, depend.Config{})
	var sessionLimit *ratelimit.Limiter
	if opt.sessionLimit > 0 {
		var err error
		sessionLimit, err = ratelimit.New(rdb, ratelimit.Config{Limit: opt.sessionLimit, Interval: time.Minute, Name: "sessions", Namespace: keyspace.MustParse(ns), Clock: clk})
		require.NoError(t, err)
	}
	b.note, err = notify.New(rdb, notify.Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	hub := notify.NewHub(b.note)
	hubCtx, stopHub := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() { _ = hub.Run(hubCtx); close(hubDone) }()
	t.Cleanup(func() { stopHub(); <-hubDone })
	<-hub.Ready()
	if opt.archive {
		b.arc = testArchive(t)
	}
	if opt.resultClock == nil {
		opt.resultClock = clk
	}
	b.plans = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(b.plans, "follows.plan.json"), []byte(testPlan), 0o600))
	eng, err := plan.New(plan.Config{RedisURL: testredis.URL(), KeyPrefix: ns + ":"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close() })
	plans, err := planapi.New(eng, planapi.Config{PlanDir: b.plans, DefaultDeadline: 5 * time.Second})
	require.NoError(t, err)
	trail, err := audit.New(rdb, audit.Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	scfg := service.Config{Store: st, Auth: au, Audit: trail, MaxContentBytes: opt.maxContent, Breakers: opt.breakers,
		Dependencies: b.deps, Schedules: b.cron, SessionLimit: sessionLimit,
		Results:       resultview.New(st, resultview.Config{Archive: b.arc, Clock: opt.resultClock}),
		Notifications: b.note, NotificationHub: hub, OnNotificationDelivered: opt.onDelivered, Plans: plans}
	// the types the tests' workers handle, the plan type, and two of the
	// example services' types (their params are checked once a test
	// publishes their spec, as a service's registration does)
	local := append(builtin.Types(), summarize.Type, planapi.Type(plans), tasktypes.Type{Name: "guarded"})
	scfg.Types, err = tasktypes.New(tasktypes.Config{Local: local, External: []string{"report.generate", "data.export"},
		Redis: rdb, Keys: protocol.NewKeys(keyspace.MustParse(ns)), Now: clk.Now})
	require.NoError(t, err)
	svc, err := service.New(scfg)
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	if opt.notesOnResponses {
		opt.middleware = httpapi.NotificationsOnResponses(svc)
	}
	api, err := httpapi.New(httpapi.Config{Service: svc, Auth: au, MaxBodyBytes: opt.maxBody, Heartbeat: opt.heartbeat,
		StatusDebounce: 20 * time.Millisecond, Mounts: opt.mounts, RouteMiddleware: opt.middleware, MaxStreams: opt.maxStreams, ClientIPHeader: opt.clientIPHeader,
		Logger: opt.logger})
	require.NoError(t, err)
	b.srv = httptest.NewServer(api)
	t.Cleanup(b.srv.Close)
	b.svc, b.api = svc, api
	return b
}

// resp is a decoded response.
type resp struct {
	code int
	body map[string]any
	raw  []byte
	hdr  http.Header
}

func (r resp) errCode() string {
	e, _ := r.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func (r resp) errField() string {
	e, _ := r.body["error"].(map[string]any)
	s, _ := e["field"].(string)
	return s
}

// with returns the bundle bound to a subtest's t.
func (b *testBundle) with(t *testing.T) *testBundle {
	c := *b
	c.t = t
	return &c
}

func (b *testBundle) do(method, path, token string, body any) resp {
	b.t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	case []byte:
		rd = bytes.NewReader(v)
	default:
		j, err := json.Marshal(v)
		require.NoError(b.t, err)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, b.srv.URL+path, rd)
	require.NoError(b.t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := b.srv.Client().Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(b.t, err)
	out := resp{code: res.StatusCode, raw: raw, hdr: res.Header}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		require.NoError(b.t, json.Unmarshal(raw, &out.body), "body: %s", raw)
		if _, health := out.body["components"]; res.StatusCode >= 400 && !health {
			require.NotEmpty(b.t, out.errCode(), "error without code: %s", raw)
		}
	}
	return out
}

func (b *testBundle) session() auth.Session {
	b.t.Helper()
	r := b.do("POST", "/api/v1/sessions", "", nil)
	require.Equal(b.t, http.StatusCreated, r.code, string(r.raw))
	return auth.Session{ID: r.body["session_id"].(string), Token: r.body["token"].(string)}
}

// schedule creates an hourly noop schedule owned by token's session.
func (b *testBundle) schedule(token string) string {
	b.t.Helper()
	r := b.do("POST", "/api/v1/schedules", token, map[string]any{"cron": "@hourly", "task_type": "noop"})
	require.Equal(b.t, http.StatusCreated, r.code, string(r.raw))
	return r.body["schedule_id"].(string)
}

func (b *testBundle) submit(token, content string) string {
	b.t.Helper()
	r := b.do("POST", "/api/v1/tasks/summarize/", token, map[string]any{"content": content})
	require.Equal(b.t, http.StatusCreated, r.code, string(r.raw))
	return r.body["task_id"].(string)
}

// activate moves up to n pending tasks to ACTIVE as a worker would, and
// returns them with their lease tokens.
func (b *testBundle) activate(n int) []*task.Task {
	b.t.Helper()
	ts, err := b.st.Fetch(context.Background(), store.FetchRequest{N: n, WorkerID: "test-worker", TokenPrefix: "tw", Lease: time.Minute})
	require.NoError(b.t, err)
	return ts
}

// deadLetter makes task id go to the DLQ through a permanent failure.
func (b *testBundle) deadLetter(id string) {
	b.t.Helper()
	for _, tk := range b.activate(100) {
		if tk.ID != id {
			continue
		}
		out, err := b.st.Fail(context.Background(), tk.ID, tk.Lease, store.Failure{ErrorType: task.ErrTypeInvalidInput, Message: "bad input", Permanent: true, Attempt: 1})
		require.NoError(b.t, err)
		require.Equal(b.t, task.StateDLQ, out.State)
		return
	}
	b.t.Fatalf("task %s was not fetched", id)
}

// testArchive is a PostgreSQL archive in a schema of the test's own,
// dropped at the end.
func testArchive(t testing.TB) *archive.Archive {
	t.Helper()
	dbURL := os.Getenv("TASKFLOW_TEST_DATABASE_URL")
	if dbURL == "" {
		dbURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	schema := "tftest_" + strings.ReplaceAll(uuid.NewString()[:13], "-", "")
	arc, err := archive.Open(context.Background(), archive.Config{DatabaseURL: dbURL, Schema: schema, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(func() {
		arc.Close()
		if p, err := pgxpool.New(context.Background(), dbURL); err == nil {
			_, _ = p.Exec(context.Background(), `DROP SCHEMA "`+schema+`" CASCADE`)
			p.Close()
		}
	})
	return arc
}
