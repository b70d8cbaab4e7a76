// Package service is taskflow's business logic behind every front end: the
// HTTP API (internal/frontend/httpapi) and, later, the MCP server call the same
// methods. Each method takes the caller's auth.Principal and enforces who may
// do what: a session sees only its own tasks; operator actions need the
// admin. Failures a caller can act on are *Error values with a stable code.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/cron"
	"github.com/taskflow/taskflow/internal/engine/depend"
	"github.com/taskflow/taskflow/internal/engine/ratelimit"
	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/resultview"
	"github.com/taskflow/taskflow/internal/frontdoor/audit"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/plan/planapi"
	"github.com/taskflow/taskflow/internal/tasktypes"
	"github.com/taskflow/taskflow/task"
)

// Config configures a Service.
type Config struct {
	// Store is the task store. Required.
	Store *store.Store
	// Auth creates sessions and named keys. Required.
	Auth *auth.Authenticator
	// Audit is the audit trail of operators' changes; nil records none.
	Audit *audit.Log
	// Types is the registry of the task types the deployment accepts
	// (internal/tasktypes): a submit of another type is refused (422), a
	// submit or schedule whose params break the type's declared params is
	// refused (422 naming the field) before anything is published, and GET
	// /api/v1/task-types and /api/v1/services list them. Default nil: any
	// type and any params are accepted.
	Types *tasktypes.Registry
	// MaxContentBytes caps a task's content (413 beyond). Default 512 KiB.
	MaxContentBytes int
	// SessionTTL is how long a session's task index lives (the store's
	// SessionIndexTTL should match; the service writes it only for tasks
	// still waiting on others). Default 24h.
	SessionTTL time.Duration
	// BatchMax is the most submits one enqueue script call carries when
	// submits arrive concurrently (they are gathered without waiting: a
	// lone submit goes alone). Default 128; 1 disables batching.
	BatchMax int
	// BatchWorkers is the number of concurrent enqueue calls. Default 4.
	BatchWorkers int
	// Workers reports the live workers (the core's list of them). Default
	// nil: the workers view is empty and health reports no workers.
	Workers func(ctx context.Context) ([]WorkerInfo, error)
	// ExternalInFlight is the dispatchers' bound on the attempts of one
	// external type in flight (TASKFLOW_EXTERNAL_INFLIGHT), shown beside
	// each type's count by Services. Default 0: sized by the live
	// services' published concurrency (dispatch.Capacity); negative:
	// unbounded.
	ExternalInFlight int
	// Breakers controls circuit breakers (reset/open); default nil: those
	// operator actions answer 409 breaker_control_unavailable.
	Breakers BreakerControl
	// Dependencies parks tasks submitted with depends_on until those
	// complete (internal/engine/depend). Default nil: depends_on is refused (422).
	Dependencies *depend.Graph
	// SessionLimit bounds POST /api/v1/sessions per client address (its
	// AcquireFor, keyed by the address). Default nil: unlimited.
	SessionLimit *ratelimit.Limiter
	// Schedules stores recurring tasks (internal/engine/cron). Default nil: the
	// schedule endpoints answer 409 schedules_unavailable.
	Schedules *cron.Cron
	// Results builds get_task_result / list_user_tasks answers (Result,
	// ListResults). Default nil: those answer 409 results_unavailable.
	Results *resultview.Results
	// Notifications holds the sessions' notifications (Notifications,
	// OpenNotifications). Default nil: those answer 409
	// notifications_unavailable.
	Notifications *notify.Notifier
	// NotificationHub wakes live feeds (OpenNotifications); its Run must
	// be running. Default nil: no live feeds.
	NotificationHub *notify.Hub
	// OnNotificationDelivered, when set, is called for each notification
	// a poll returns ("poll") or a live feed sends (its Via), with the
	// delivery time. Default nil.
	OnNotificationDelivered func(via string, n Notification, at time.Time)
	// Plans runs, lists and describes named plans (RunPlan, Plans,
	// PlanGraph). Default nil: they answer 409 plans_unavailable. (Plan
	// tasks are checked at submit by the plan type's declaration in Types:
	// planapi.Type.)
	Plans *planapi.Service
	// IdempotencyTTL is how long an Idempotency-Key's record is kept
	// (TASKFLOW_IDEMPOTENCY_TTL): a resend with the key within it is
	// answered the first call's result. Default 24h.
	IdempotencyTTL time.Duration
	// TypeQueues maps a task type to the named queue its tasks go to
	// when their submit names none (TASKFLOW_TYPE_QUEUES). Default none:
	// every such task goes to the default queue.
	TypeQueues map[string]string
	// Logger receives the service's own logs. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock (health timestamps, run_at checks). Default time.Now.
	Now func() time.Time
}

// BreakerControl is how the operator endpoints move circuit breakers.
type BreakerControl interface {
	// Reset closes the breaker of dependency ("" = every dependency).
	Reset(ctx context.Context, dependency string) (BreakerOutcome, error)
	// Open forces the breaker of dependency open for d ("" = every one;
	// d = 0: until a reset).
	Open(ctx context.Context, dependency string, d time.Duration) (BreakerOutcome, error)
}

// WorkerInfo is one live worker as the workers view shows it.
type WorkerInfo struct {
	ID            string            `json:"worker_id"`
	Host          string            `json:"host,omitempty"`
	StartedAt     time.Time         `json:"started_at"`
	LastHeartbeat time.Time         `json:"last_heartbeat"`
	HeartbeatAge  float64           `json:"heartbeat_age_seconds"`
	Concurrency   int               `json:"concurrency"`
	InFlight      int               `json:"in_flight"`
	TaskTypes     []string          `json:"task_types,omitempty"`
	Breakers      map[string]string `json:"circuit_breakers" openapi:"enum=CLOSED|HALF_OPEN|OPEN"`
}

// WithDefaults returns c with unset fields defaulted.
func (c Config) WithDefaults() Config {
	if c.MaxContentBytes == 0 {
		c.MaxContentBytes = 512 << 10
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = 24 * time.Hour
	}
	if c.IdempotencyTTL == 0 {
		c.IdempotencyTTL = 24 * time.Hour
	}
	if c.BatchMax == 0 {
		c.BatchMax = 128
	}
	if c.BatchWorkers == 0 {
		c.BatchWorkers = 4
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate says what is wrong with c.
func (c Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("service: Store is required"))
	}
	if c.Auth == nil {
		errs = append(errs, errors.New("service: Auth is required"))
	}
	if c.MaxContentBytes < 1 {
		errs = append(errs, fmt.Errorf("service: MaxContentBytes %d must be positive", c.MaxContentBytes))
	}
	if c.BatchMax < 1 || c.BatchMax > 500 {
		errs = append(errs, fmt.Errorf("service: BatchMax %d must be within [1, 500]", c.BatchMax))
	}
	if c.BatchWorkers < 1 {
		errs = append(errs, fmt.Errorf("service: BatchWorkers %d must be positive", c.BatchWorkers))
	}
	if c.IdempotencyTTL < time.Second {
		errs = append(errs, fmt.Errorf("service: IdempotencyTTL %s must be at least 1s", c.IdempotencyTTL))
	}
	return errors.Join(errs...)
}

// Service implements taskflow's operations. Start it with Start, stop it
// with Close (it runs the submit batchers).
type Service struct {
	cfg   Config
	st    *store.Store
	rdb   redis.UniversalClient
	batch *batcher
	idem  inflight
}

// New returns a Service; call Close when done.
func New(cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, st: cfg.Store, rdb: cfg.Store.Client()}
	s.batch = newBatcher(s, cfg.BatchMax, cfg.BatchWorkers)
	return s, nil
}

// Close stops the batchers after the submits in flight are written.
func (s *Service) Close() { s.batch.close() }

// Session is a newly created session (CreateSession's answer): its id, its
// token (shown once) and its lifetime.
type Session = auth.Session

// CreateSession opens a new session; anyone may, within SessionLimit per
// client address (client: the caller's address as the front end knows it;
// "" = unknown, then not limited).
func (s *Service) CreateSession(ctx context.Context, client string) (auth.Session, error) {
	if s.cfg.SessionLimit != nil && client != "" {
		err := s.cfg.SessionLimit.AcquireFor(ctx, client)
		var le *ratelimit.LimitedError
		switch {
		case errors.As(err, &le):
			lim := s.cfg.SessionLimit.Config()
			return auth.Session{}, &Error{Kind: KindRateLimited, Code: "rate_limited", RetryAfter: le.Wait,
				Message: fmt.Sprintf("at most %d sessions per %s from one address; retry in %s", lim.Limit, lim.Interval, le.Wait.Round(time.Second))}
		case err != nil && isConnErr(err):
			return auth.Session{}, Unavailable(err)
		case err != nil:
			return auth.Session{}, Internal(err)
		}
	}
	sess, err := s.cfg.Auth.CreateSession(ctx)
	if err != nil {
		return auth.Session{}, Unavailable(err)
	}
	return sess, nil
}

// EndSession ends the caller's own session: its token stops working (in
// every API process within the token cache's lifetime, 10 s). The
// session's tasks stay; the admin can still reach them.
func (s *Service) EndSession(ctx context.Context, p auth.Principal, token string) error {
	if p.SessionID == "" {
		if p.Admin {
			return Invalid("invalid_parameter", "Authorization", "the admin key is not a session; send the session's token")
		}
		return Unauthenticated("credentials required")
	}
	err := s.cfg.Auth.DeleteSession(ctx, token)
	if errors.Is(err, auth.ErrInvalidToken) {
		return Unauthenticated("the session has already ended")
	}
	if err != nil {
		return Unavailable(err)
	}
	return nil
}

// storeErr maps the store's errors to service errors for task id.
func storeErr(id string, err error) error {
	if err == nil {
		return nil
	}
	var se *Error
	if errors.As(err, &se) {
		return err
	}
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		return &Error{Kind: KindUnprocessable, Code: "validation_failed", Field: ve.Field, Message: ve.Field + " " + ve.Reason, Err: err}
	}
	if errors.Is(err, task.ErrNotFound) {
		return taskNotFound(id, err)
	}
	if errors.Is(err, task.ErrDuplicateTaskID) {
		return &Error{Kind: KindConflict, Code: "duplicate_task_id", Field: "task_id", Message: "a task with this id already exists", Err: err}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, store.ErrPartitionDown) {
		return Unavailable(err)
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) || isConnErr(err) {
		return Unavailable(err)
	}
	// MOVED, READONLY, CLUSTERDOWN: where the client points, not the
	// request; a 503 whose logged error says what to fix
	if xerr := redisconn.Explain(err); errors.Is(xerr, redisconn.ErrTopology) {
		return Unavailable(xerr)
	}
	return Internal(err)
}

func isConnErr(err error) bool {
	msg := err.Error()
	for _, s := range []string{"connection refused", "broken pipe", "connection reset", "i/o timeout", "EOF", "pool timeout", "client is closed"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// authorize checks that p may touch t: the admin always, a session only its
// own tasks. Another session's task is answered exactly as a task that does
// not exist (taskNotFound), so a session cannot learn which ids are taken:
// this is the one ownership rule of every front end (tasks, results,
// schedules, depends_on, notifications).
func authorize(p auth.Principal, t *task.Task) error {
	if p.Admin {
		return nil
	}
	if p.SessionID == "" {
		return Unauthenticated("credentials required")
	}
	if t.SessionID != p.SessionID {
		return taskNotFound(t.ID, nil)
	}
	return nil
}

// taskNotFound is the answer for a task id the caller cannot see: missing,
// or another session's.
func taskNotFound(id string, err error) *Error {
	return &Error{Kind: KindNotFound, Code: "task_not_found", Message: fmt.Sprintf("no task %s", id), Err: err}
}

func requireAdmin(p auth.Principal) error {
	if p.Admin {
		return nil
	}
	if p.Anonymous() {
		return Unauthenticated("credentials required")
	}
	return Forbidden("this operation needs the admin key")
}

func requirePrincipal(p auth.Principal) error {
	if p.Anonymous() {
		return Unauthenticated("credentials required")
	}
	return nil
}

// knownType reports whether the deployment accepts taskType, with the
// names it accepts.
func (s *Service) knownType(ctx context.Context, taskType string) (bool, []string) {
	if s.cfg.Types == nil || s.cfg.Types.Known(ctx, taskType) {
		return true, nil
	}
	var types []string
	for _, t := range s.cfg.Types.List(ctx) {
		types = append(types, t.Name)
	}
	return false, types
}
