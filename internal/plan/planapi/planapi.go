// Package planapi serves the plan engine to the rest of taskflow: named
// runs, traced or not, the list of plans and each plan's graph for the
// service layer (internal/frontdoor/service's RunPlan, Plans and PlanGraph, which
// the HTTP API's /api/v1/plans routes call) and the worker handler of
// task_type "plan" whose result is the plan's output. Both read plans by
// name from one directory and share one plan.Engine. Errors say what kind
// of failure they are (Error.Kind); the service maps the kinds to its own,
// and the HTTP API those to statuses.
package planapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	builtin "github.com/taskflow/taskflow/plans"

	"github.com/google/uuid"
	"golang.org/x/sync/singleflight"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/plan/ir"
)

// Config configures a Service.
type Config struct {
	// PlanDir holds the plans, <name>.plan.json. Default empty: the plans
	// built into the binary (the repository's plans/), so a process finds
	// them from any working directory.
	PlanDir string
	// DefaultDeadline bounds a run whose request names no deadline_ms.
	// Default 1s.
	DefaultDeadline time.Duration
	// MaxDeadline is the largest deadline_ms a request may ask. Default 30s.
	MaxDeadline time.Duration
	// NodeTimeout bounds each node unless the request sets
	// node_timeout_ms. Default 0 (none: the deadline bounds the run).
	NodeTimeout time.Duration
	// Logger receives failures that are the server's fault. Default: discard.
	Logger *slog.Logger
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.DefaultDeadline <= 0 {
		c.DefaultDeadline = time.Second
	}
	if c.MaxDeadline <= 0 {
		c.MaxDeadline = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate says what is wrong with c.
func (c Config) Validate() error {
	if c.DefaultDeadline > c.MaxDeadline {
		return fmt.Errorf("planapi: DefaultDeadline %s is above MaxDeadline %s", c.DefaultDeadline, c.MaxDeadline)
	}
	if c.NodeTimeout < 0 {
		return errors.New("planapi: NodeTimeout must not be negative")
	}
	return nil
}

// Service executes named plans for the HTTP API and for workers.
type Service struct {
	eng *plan.Engine
	cfg Config

	mu    sync.Mutex
	cache map[string]cached
	// loads makes concurrent requests for a plan not in the cache (or
	// whose file changed) compile it once, keyed by name and file version.
	loads singleflight.Group
	// compiles counts plan compilations (tests).
	compiles atomic.Int64
}

type cached struct {
	mod  time.Time
	size int64
	c    *plan.Compiled
}

// New returns a Service running plans on eng.
func New(eng *plan.Engine, cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Service{eng: eng, cfg: cfg, cache: map[string]cached{}}, nil
}

// ErrorKind is the class of a failure: whose fault it is and whether
// trying again can help.
type ErrorKind int

// Kinds of errors.
const (
	// KindInvalid: the request or the plan name is malformed.
	KindInvalid ErrorKind = iota + 1
	// KindNotFound: no plan of that name.
	KindNotFound
	// KindEvaluation: the plan's own computation failed on this request
	// (e.g. a param it needs is unset); the same request fails again.
	KindEvaluation
	// KindPlanInvalid: the plan file does not compile (the operator's to fix).
	KindPlanInvalid
	// KindUpstream: the plans' data store failed (Redis down); retry later.
	KindUpstream
	// KindTimeout: the run or a node passed its deadline.
	KindTimeout
)

// Error is a failure with its kind, a stable code and, for bad input, the
// field at fault.
type Error struct {
	Kind    ErrorKind
	Code    string
	Message string
	Field   string
	Err     error
}

// CallersFault reports whether the request itself is at fault (invalid,
// unknown plan, an evaluation failure): sending it again cannot succeed.
func (e *Error) CallersFault() bool {
	return e.Kind == KindInvalid || e.Kind == KindNotFound || e.Kind == KindEvaluation
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// Input is an execution request: rankd's request plus limits.
type Input struct {
	Request       *plan.Request
	Deadline      time.Duration
	NodeTimeout   time.Duration
	RequestIDSent bool
}

// inputFields are the fields of an execution request; any other is refused
// (a misspelt deadline_ms would otherwise be ignored).
var inputFields = []string{"user_id", "request_id", "param_overrides", "deadline_ms", "node_timeout_ms"}

// ParseInput decodes rankd's request ({"user_id", "request_id"?,
// "param_overrides"?}) plus the optional "deadline_ms" and "node_timeout_ms".
// Other fields are refused, naming the field.
func (s *Service) ParseInput(body []byte) (*Input, error) { return s.parseInput(body, "") }

// parseInput is ParseInput also accepting the field extra ("" none): a
// plan task's params carry plan_name beside the request.
func (s *Service) parseInput(body []byte, extra string) (*Input, error) {
	req, err := plan.ParseRequest(body, s.eng.Registry())
	if err != nil {
		var re *plan.RequestError
		if errors.As(err, &re) {
			field := re.Field
			if field == "" {
				field = "body"
			}
			return nil, &Error{Kind: KindInvalid, Code: codeOf(re.Kind), Message: re.Kind + ": " + re.Detail, Field: field, Err: err}
		}
		return nil, err
	}
	// ParseRequest accepted body: it is a JSON object.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, &Error{Kind: KindInvalid, Code: "invalid_json", Message: "the body must be a JSON object", Field: "body", Err: err}
	}
	unknown := make([]string, 0, 1)
	for k := range top {
		if k != extra && !slices.Contains(inputFields, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		allowed := strings.Join(inputFields, ", ")
		if extra != "" {
			allowed += ", " + extra
		}
		return nil, &Error{Kind: KindInvalid, Code: "invalid_request", Field: unknown[0],
			Message: fmt.Sprintf("unknown field '%s' (allowed: %s)", unknown[0], allowed)}
	}
	in := &Input{Request: req, Deadline: s.cfg.DefaultDeadline, NodeTimeout: s.cfg.NodeTimeout}
	for _, f := range []struct {
		name string
		into *time.Duration
	}{{"deadline_ms", &in.Deadline}, {"node_timeout_ms", &in.NodeTimeout}} {
		raw, ok := top[f.name]
		if !ok || string(raw) == "null" {
			continue
		}
		var ms float64
		// Compare in milliseconds: a huge value overflows a Duration.
		if json.Unmarshal(raw, &ms) != nil || !(ms > 0 && ms <= float64(s.cfg.MaxDeadline.Milliseconds())) {
			return nil, &Error{Kind: KindInvalid, Code: "invalid_request", Field: f.name,
				Message: fmt.Sprintf("%s must be a number of milliseconds above 0 and at most %d", f.name, s.cfg.MaxDeadline.Milliseconds())}
		}
		*f.into = time.Duration(ms * float64(time.Millisecond))
	}
	in.RequestIDSent = req.RequestID != ""
	if req.RequestID == "" {
		req.RequestID = uuid.NewString()
	}
	return in, nil
}

func codeOf(kind string) string {
	switch kind {
	case plan.ErrKindJSON:
		return "invalid_json"
	case plan.ErrKindParams:
		return "invalid_param_overrides"
	}
	return "invalid_request"
}

// MaxNameLen is the longest plan name. A name becomes a file name
// (<name>.plan.json) and file systems refuse names of 255 bytes or more;
// no plan needs a name near that.
const MaxNameLen = 128

// CheckName says why name cannot name a plan (nil when it can): empty,
// longer than MaxNameLen, or not of the registry's plan-name characters
// (letters, digits and _ in the shipped validation.toml). It is checked
// before a name reaches the file system, by the HTTP route and the plan
// task alike (both go through Plan), and at submit (CheckTask).
func (s *Service) CheckName(name string) error {
	switch {
	case name == "":
		return &Error{Kind: KindInvalid, Code: "invalid_plan_name", Field: "name", Message: "the plan name is empty"}
	case len(name) > MaxNameLen:
		return &Error{Kind: KindInvalid, Code: "invalid_plan_name", Field: "name",
			Message: fmt.Sprintf("the plan name is %d bytes long; at most %d", len(name), MaxNameLen)}
	case !s.eng.Registry().Validation.ValidPlanName(name):
		return &Error{Kind: KindInvalid, Code: "invalid_plan_name", Field: "name",
			Message: fmt.Sprintf("plan name %q may hold only letters, digits and _", truncate(name, 40))}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// CheckTask checks the params of a plan task before it is queued: the
// request fields, the plan's name (CheckName) and that the plan exists and
// compiles. The error's Field is the params field at fault ("plan_name"
// for the name).
func (s *Service) CheckTask(params json.RawMessage) error {
	var head struct {
		PlanName *string `json:"plan_name"`
	}
	if len(params) == 0 || json.Unmarshal(params, &head) != nil {
		return &Error{Kind: KindInvalid, Code: "invalid_request", Field: "", Message: "params must be a JSON object with plan_name and user_id"}
	}
	if head.PlanName == nil {
		return &Error{Kind: KindInvalid, Code: "invalid_request", Field: "plan_name", Message: "plan_name is required: the plan to run"}
	}
	if _, err := s.parseInput(params, "plan_name"); err != nil {
		return err
	}
	if _, err := s.Plan(*head.PlanName); err != nil {
		var pe *Error
		if errors.As(err, &pe) && pe.Field == "name" {
			cp := *pe
			cp.Field = "plan_name"
			return &cp
		}
		return err
	}
	return nil
}

// Plan returns the compiled plan called name, recompiling it when its file
// changed.
func (s *Service) Plan(name string) (*plan.Compiled, error) {
	if err := s.CheckName(name); err != nil {
		return nil, err
	}
	if s.cfg.PlanDir == "" {
		return s.builtinPlan(name)
	}
	path := filepath.Join(s.cfg.PlanDir, name+".plan.json")
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &Error{Kind: KindNotFound, Code: "plan_not_found", Field: "name", Message: fmt.Sprintf("no plan named %q", name)}
		}
		var pe *os.PathError
		if errors.As(err, &pe) && errors.Is(pe.Err, syscall.ENAMETOOLONG) { // a registry pattern allowing more than the file system
			return nil, &Error{Kind: KindInvalid, Code: "invalid_plan_name", Field: "name", Message: "the plan name is too long for a file name", Err: err}
		}
		return nil, err
	}
	s.mu.Lock()
	hit, ok := s.cache[name]
	s.mu.Unlock()
	if ok && hit.mod.Equal(st.ModTime()) && hit.size == st.Size() {
		return hit.c, nil
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", name, st.ModTime().UnixNano(), st.Size())
	v, err, _ := s.loads.Do(key, func() (any, error) {
		// a caller that missed the cache just before an earlier compile of
		// the same file stored it finds it here, instead of compiling again
		s.mu.Lock()
		hit, ok := s.cache[name]
		s.mu.Unlock()
		if ok && hit.mod.Equal(st.ModTime()) && hit.size == st.Size() {
			return hit.c, nil
		}
		s.compiles.Add(1)
		c, err := s.eng.Load(path)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.cache[name] = cached{mod: st.ModTime(), size: st.Size(), c: c}
		s.mu.Unlock()
		return c, nil
	})
	if err != nil {
		return nil, &Error{Kind: KindPlanInvalid, Code: "plan_invalid", Message: fmt.Sprintf("plan %q is invalid: %v", name, err), Err: err}
	}
	return v.(*plan.Compiled), nil
}

// builtinPlan compiles (once) the plan called name from the plans built
// into the binary.
func (s *Service) builtinPlan(name string) (*plan.Compiled, error) {
	s.mu.Lock()
	hit, ok := s.cache[name]
	s.mu.Unlock()
	if ok {
		return hit.c, nil
	}
	v, err, _ := s.loads.Do(name, func() (any, error) {
		s.mu.Lock()
		hit, ok := s.cache[name]
		s.mu.Unlock()
		if ok {
			return hit.c, nil
		}
		data, err := fs.ReadFile(builtin.FS(), name+builtin.Suffix)
		if err != nil {
			return nil, err
		}
		s.compiles.Add(1)
		p, err := plan.Parse(data, name+builtin.Suffix)
		if err != nil {
			return nil, err
		}
		c, err := s.eng.Compile(p)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.cache[name] = cached{c: c}
		s.mu.Unlock()
		return c, nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		names, _ := builtin.Names(builtin.FS())
		return nil, &Error{Kind: KindNotFound, Code: "plan_not_found", Field: "name",
			Message: fmt.Sprintf("no plan named %q (the plans are: %s)", name, strings.Join(names, ", "))}
	}
	if err != nil {
		return nil, &Error{Kind: KindPlanInvalid, Code: "plan_invalid", Message: fmt.Sprintf("plan %q is invalid: %v", name, err), Err: err}
	}
	return v.(*plan.Compiled), nil
}

// Execute runs plan name for in and returns rankd's success line (without
// newline) as JSON.
func (s *Service) Execute(ctx context.Context, name string, in *Input) (json.RawMessage, error) {
	out, _, err := s.execute(ctx, name, in, false)
	return out, err
}

// execute runs plan name for in, recording the engine's per-node timeline
// when trace is set, and returns rankd's success line with the result.
func (s *Service) execute(ctx context.Context, name string, in *Input, trace bool) (json.RawMessage, *plan.Result, error) {
	c, err := s.Plan(name)
	if err != nil {
		return nil, nil, err
	}
	res, err := s.eng.Run(ctx, c, in.Request, plan.RunOptions{Deadline: in.Deadline, NodeTimeout: in.NodeTimeout, Trace: trace})
	if err != nil {
		return nil, nil, runError(err)
	}
	return plan.AppendOutput(nil, in.Request.RequestID, uuid.NewString(), res.Outputs, s.eng.Registry()), res, nil
}

func runError(err error) error {
	var ne *plan.NodeError
	switch {
	case errors.Is(err, plan.ErrDeadlineExceeded):
		return &Error{Kind: KindTimeout, Code: "deadline_exceeded", Message: err.Error(), Err: err}
	case errors.Is(err, plan.ErrNodeTimeout):
		return &Error{Kind: KindTimeout, Code: "node_timeout", Message: err.Error(), Err: err}
	case errors.Is(err, ir.ErrEval):
		return &Error{Kind: KindEvaluation, Code: "plan_failed", Message: err.Error(), Err: err}
	case errors.As(err, &ne):
		return &Error{Kind: KindUpstream, Code: "plan_failed", Message: err.Error(), Err: err}
	}
	return err
}
