// Package archive is the durable archive of finished tasks in PostgreSQL
// ("if result not in cache, fetch from" the database). Redis
// keeps a task and its result for 24 hours; the archive keeps them until an
// operator deletes them. Writes are idempotent upserts, so the orchestrator
// may archive a task again after a crash or a late completion.
package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskflow/taskflow/task"
)

// ErrNotFound: the archive holds no task with that id.
var ErrNotFound = errors.New("archive: task not found")

// Config configures an Archive.
type Config struct {
	// DatabaseURL is the PostgreSQL connection string (DATABASE_URL).
	// Required.
	DatabaseURL string
	// Schema holds the archive's table (TASKFLOW_ARCHIVE_SCHEMA); it is
	// created when missing. Default "taskflow".
	Schema string
	// MaxConns bounds the connection pool. Default 4.
	MaxConns int32
}

// WithDefaults returns c with unset fields defaulted.
func (c Config) WithDefaults() Config {
	if c.Schema == "" {
		c.Schema = "taskflow"
	}
	if c.MaxConns == 0 {
		c.MaxConns = 4
	}
	return c
}

var identRe = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Validate says what is wrong with c.
func (c Config) Validate() error {
	switch {
	case c.DatabaseURL == "":
		return errors.New("archive: DatabaseURL (DATABASE_URL) is required")
	case !identRe.MatchString(c.Schema):
		return fmt.Errorf("archive: Schema %q must match %s", c.Schema, identRe)
	case c.MaxConns < 1:
		return fmt.Errorf("archive: MaxConns %d must be ≥ 1", c.MaxConns)
	}
	return nil
}

// Archive stores finished tasks. It is safe for concurrent use.
type Archive struct {
	pool  *pgxpool.Pool
	table string // quoted schema.table
	audit string // quoted schema.audit_log
	cfg   Config
}

// Open connects, creates the schema and table when missing, and returns the
// archive. Several processes may Open at once.
func Open(ctx context.Context, cfg Config) (*Archive, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("archive: DATABASE_URL: %w", err)
	}
	pc.MaxConns = cfg.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("archive: connect: %w", err)
	}
	a := &Archive{pool: pool, cfg: cfg, table: pgx.Identifier{cfg.Schema, "archived_tasks"}.Sanitize(),
		audit: pgx.Identifier{cfg.Schema, "audit_log"}.Sanitize()}
	if err := a.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return a, nil
}

// Close closes the pool.
func (a *Archive) Close() { a.pool.Close() }

// Schema is the schema the archive lives in.
func (a *Archive) Schema() string { return a.cfg.Schema }

func (a *Archive) migrate(ctx context.Context) error {
	schema := pgx.Identifier{a.cfg.Schema}.Sanitize()
	idx := pgx.Identifier{"archived_tasks_session_idx"}.Sanitize()
	stmts := []string{
		// One migrator at a time across processes (CREATE ... IF NOT
		// EXISTS races on the catalog otherwise).
		`SELECT pg_advisory_xact_lock(hashtext('taskflow-archive-migrate'))`,
		`CREATE SCHEMA IF NOT EXISTS ` + schema,
		`CREATE TABLE IF NOT EXISTS ` + a.table + ` (
			task_id      text PRIMARY KEY,
			task_type    text NOT NULL,
			session_id   text NOT NULL DEFAULT '',
			state        text NOT NULL,
			priority     text NOT NULL DEFAULT 'normal',
			params       jsonb,
			result       jsonb,
			last_error   text NOT NULL DEFAULT '',
			error_type   text NOT NULL DEFAULT '',
			retry_count  integer NOT NULL DEFAULT 0,
			timeout_s    integer NOT NULL DEFAULT 0,
			created_at   timestamptz NOT NULL,
			updated_at   timestamptz NOT NULL,
			completed_at timestamptz,
			archived_at  timestamptz NOT NULL DEFAULT now(),
			task         jsonb NOT NULL
		)`,
		`CREATE INDEX IF NOT EXISTS ` + idx + ` ON ` + a.table + ` (session_id, updated_at DESC)`,
		// the audit trail's entries, kept here beyond Redis's retention
		`CREATE TABLE IF NOT EXISTS ` + a.audit + ` (
			entry_id text PRIMARY KEY,
			at       timestamptz NOT NULL,
			actor    text NOT NULL,
			role     text NOT NULL DEFAULT '',
			action   text NOT NULL,
			target   text NOT NULL DEFAULT '',
			status   integer NOT NULL,
			client   text NOT NULL DEFAULT ''
		)`,
	}
	tx, err := a.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("archive: migrate: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("archive: migrate: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("archive: migrate: %w", err)
	}
	return nil
}

// PutAuditEntry keeps one entry of the audit trail (idempotent by its
// stream id), so the trail outlives its Redis retention.
func (a *Archive) PutAuditEntry(ctx context.Context, id string, at time.Time, actor, role, action, target string, status int, client string) error {
	_, err := a.pool.Exec(ctx, `INSERT INTO `+a.audit+` (entry_id, at, actor, role, action, target, status, client)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (entry_id) DO NOTHING`,
		id, at, actor, role, action, target, status, client)
	if err != nil {
		return fmt.Errorf("archive: audit entry: %w", err)
	}
	return nil
}

// AuditEntries counts the archived audit entries of actor ("" = all): for
// tests and checks.
func (a *Archive) AuditEntries(ctx context.Context, actor string) (int64, error) {
	var n int64
	err := a.pool.QueryRow(ctx, `SELECT count(*) FROM `+a.audit+` WHERE $1 = '' OR actor = $1`, actor).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("archive: count audit entries: %w", err)
	}
	return n, nil
}

func jsonOrNil(r json.RawMessage) any {
	if len(r) == 0 || string(r) == "null" {
		return nil
	}
	return string(r)
}

// Put archives t (idempotent): a row already holding a newer version of
// the task (a later updated_at) is left as it is.
func (a *Archive) Put(ctx context.Context, t *task.Task) error {
	return a.PutBatch(ctx, []*task.Task{t})
}

// PutBatch archives many tasks in one round trip.
func (a *Archive) PutBatch(ctx context.Context, ts []*task.Task) error {
	if len(ts) == 0 {
		return nil
	}
	q := `INSERT INTO ` + a.table + ` (task_id, task_type, session_id, state, priority, params, result,
			last_error, error_type, retry_count, timeout_s, created_at, updated_at, completed_at, archived_at, task)
		VALUES ($1,$2,$3,$4,$5,$6::jsonb,$7::jsonb,$8,$9,$10,$11,$12,$13,$14,now(),$15::jsonb)
		ON CONFLICT (task_id) DO UPDATE SET
			task_type = EXCLUDED.task_type, session_id = EXCLUDED.session_id, state = EXCLUDED.state,
			priority = EXCLUDED.priority, params = EXCLUDED.params, result = EXCLUDED.result,
			last_error = EXCLUDED.last_error, error_type = EXCLUDED.error_type, retry_count = EXCLUDED.retry_count,
			timeout_s = EXCLUDED.timeout_s, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
			completed_at = EXCLUDED.completed_at, archived_at = now(), task = EXCLUDED.task
		WHERE ` + a.table + `.updated_at <= EXCLUDED.updated_at`
	b := &pgx.Batch{}
	for _, t := range ts {
		if t == nil || t.ID == "" {
			return errors.New("archive: a task without an id")
		}
		full, err := json.Marshal(record{Task: t, TimeoutSeconds: int(t.Timeout / time.Second)})
		if err != nil {
			return fmt.Errorf("archive: encode %s: %w", t.ID, err)
		}
		b.Queue(q, t.ID, t.Type, t.SessionID, string(t.State), string(t.Priority), jsonOrNil(t.Params), jsonOrNil(t.Result),
			t.LastError, t.ErrorType, t.RetryCount, int(t.Timeout/time.Second), t.CreatedAt, t.UpdatedAt, t.CompletedAt, string(full))
	}
	if err := a.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("archive: put: %w", err)
	}
	return nil
}

// record is the task as archived: the task's JSON plus the fields its JSON
// form leaves out.
type record struct {
	*task.Task
	TimeoutSeconds int `json:"timeout"`
}

// Get returns the archived task with id, or ErrNotFound.
func (a *Archive) Get(ctx context.Context, id string) (*task.Task, error) {
	var raw []byte
	err := a.pool.QueryRow(ctx, `SELECT task FROM `+a.table+` WHERE task_id = $1`, id).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("archive: get %s: %w", id, err)
	}
	return decode(raw)
}

func decode(raw []byte) (*task.Task, error) {
	r := record{Task: &task.Task{}}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("archive: decode: %w", err)
	}
	r.Task.Timeout = time.Duration(r.TimeoutSeconds) * time.Second
	return r.Task, nil
}

// ListSession returns the session's archived tasks, newest first, at most
// limit (1–1000), optionally only in states.
func (a *Archive) ListSession(ctx context.Context, sessionID string, states []task.State, limit int) ([]*task.Task, error) {
	if limit < 1 || limit > 1000 {
		limit = 100
	}
	ss := make([]string, len(states))
	for i, s := range states {
		ss[i] = string(s)
	}
	rows, err := a.pool.Query(ctx, `SELECT task FROM `+a.table+`
		WHERE session_id = $1 AND (cardinality($2::text[]) = 0 OR state = ANY($2::text[]))
		ORDER BY updated_at DESC LIMIT $3`, sessionID, ss, limit)
	if err != nil {
		return nil, fmt.Errorf("archive: list: %w", err)
	}
	defer rows.Close()
	var out []*task.Task
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("archive: list: %w", err)
		}
		t, err := decode(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("archive: list: %w", err)
	}
	return out, nil
}

// Count returns how many tasks the archive holds.
func (a *Archive) Count(ctx context.Context) (int64, error) {
	var n int64
	if err := a.pool.QueryRow(ctx, `SELECT count(*) FROM `+a.table).Scan(&n); err != nil {
		return 0, fmt.Errorf("archive: count: %w", err)
	}
	return n, nil
}
