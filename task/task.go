// Package task holds the task model shared by every part of taskflow: the
// Task record, its states and the transitions allowed between them. It
// imports no Redis: the store package persists what this package describes.
package task

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// State is where a task is in its lifecycle.
type State string

// The states of docs/state_machine.md. Some clients call ACTIVE
// "PROCESSING"; ParseState accepts that name at the edges, and it is never
// stored.
const (
	StatePending   State = "PENDING"
	StateActive    State = "ACTIVE"
	StateCompleted State = "COMPLETED"
	StateFailed    State = "FAILED"
	StateDLQ       State = "DLQ"
	StateTimeout   State = "TIMEOUT"
	StateCancelled State = "CANCELLED"
)

// States lists every state in a stable order (for counters and listings).
var States = []State{StatePending, StateActive, StateCompleted, StateFailed, StateDLQ, StateTimeout, StateCancelled}

// ParseState accepts a state name in any case, plus aliases
// (PROCESSING for ACTIVE).
func ParseState(s string) (State, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if u == "PROCESSING" {
		return StateActive, nil
	}
	for _, st := range States {
		if string(st) == u {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown task state %q", s)
}

// transitions is the state machine of docs/state_machine.md.
var transitions = map[State][]State{
	StatePending:   {StateActive, StateDLQ, StateCancelled},
	StateActive:    {StateCompleted, StateFailed, StateTimeout, StateCancelled, StatePending}, // PENDING: lease expired or graceful hand-back
	StateFailed:    {StatePending, StateDLQ},
	StateTimeout:   {StateCompleted, StateFailed, StateCancelled}, // a late outcome, or a cancel
	StateDLQ:       {StatePending},                                // manual retry
	StateCompleted: {},                                            // final
	StateCancelled: {},                                            // final
}

// CanTransition reports whether from → to is allowed.
func CanTransition(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Priority orders pending tasks (future enhancement).
type Priority string

const (
	PriorityHigh   Priority = "high"
	PriorityNormal Priority = "normal"
	PriorityLow    Priority = "low"
)

// Priorities lists every priority, highest first.
var Priorities = []Priority{PriorityHigh, PriorityNormal, PriorityLow}

// ParsePriority accepts "", high, normal, low ("" means normal).
func ParsePriority(s string) (Priority, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "normal":
		return PriorityNormal, nil
	case "high":
		return PriorityHigh, nil
	case "low":
		return PriorityLow, nil
	}
	return "", fmt.Errorf("unknown priority %q (want high, normal or low)", s)
}

// ErrorRecord is one entry of a task's error history.
type ErrorRecord struct {
	At        time.Time `json:"at"`
	Attempt   int       `json:"attempt"`
	ErrorType string    `json:"error_type"`
	Message   string    `json:"message"`
	Worker    string    `json:"worker,omitempty"`
	// Details is the failure's structured detail (an external service's
	// error.details object), when it reported any.
	Details json.RawMessage `json:"details,omitempty" openapi:"type=object"`
}

// StateChange is one entry of a task's state history.
type StateChange struct {
	At    time.Time `json:"at"`
	From  State     `json:"from,omitempty"`
	To    State     `json:"to"`
	Cause string    `json:"cause,omitempty" jsonschema:"why it moved, e.g. cancel, retry_due, lease_expired, manual_retry, or the error type"`
}

// Task is the single source of truth about one task: its metadata, state
// and history, attempts and outcome. Times are UTC; optional times are nil
// when unset.
type Task struct {
	ID        string          `json:"task_id"`
	Type      string          `json:"task_type"`
	State     State           `json:"state"`
	Content   string          `json:"content,omitempty"`
	Params    json.RawMessage `json:"params,omitempty" openapi:"type=object" jsonschema:"handler parameters"`
	SessionID string          `json:"session_id,omitempty"`
	Priority  Priority        `json:"priority"`
	// Queue is the named queue the task waits in ("default" unless its
	// submit or its type named another).
	Queue string `json:"queue,omitempty"`
	// LimitKey is the key per-key limits count the task against (a
	// tenant, a customer); "" for none.
	LimitKey    string          `json:"limit_key,omitempty"`
	Timeout     time.Duration   `json:"-"` // seconds on the wire (timeout)
	RetryCount  int             `json:"retry_count"`
	MaxRetries  int             `json:"max_retries"`
	LastError   string          `json:"last_error,omitempty"`
	ErrorType   string          `json:"error_type,omitempty"`
	RetryAfter  *time.Time      `json:"retry_after,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	StartedAt   *time.Time      `json:"started_at,omitempty"`
	CompletedAt *time.Time      `json:"completed_at,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	Worker      string          `json:"worker,omitempty" jsonschema:"the worker (or external service) that holds or last held it"`
	// Lease is the fencing token of the current ACTIVE attempt: a worker
	// whose token no longer matches can no longer change the task.
	Lease string `json:"-"`
	// CancelRequested: a cancel of the ACTIVE task was requested and its
	// holder has not ended it yet.
	CancelRequested bool `json:"-"`
	// HandedOff: the current attempt (Lease) was handed off to the
	// external path (store.Handoff); Worker names the new holder.
	HandedOff bool `json:"-"`
	// Traceparent is the W3C trace context of the task's submit
	// ("00-<trace id>-<span id>-<flags>"), "" when it was submitted
	// without tracing: its attempts, dispatches and outcome continue that
	// trace (internal/platform/tracing).
	Traceparent  string        `json:"-"`
	ErrorHistory []ErrorRecord `json:"error_history"`
	StateHistory []StateChange `json:"state_history"`
}

// Attempt is the number of the current (or last) attempt: 1 for the first
// run, 2 for the first retry, and so on.
func (t *Task) Attempt() int { return t.RetryCount + 1 }

// Final reports whether the task ended for good: COMPLETED, CANCELLED, or
// in the DLQ (where only a manual retry moves it again).
func (s State) Final() bool {
	return s == StateCompleted || s == StateDLQ || s == StateCancelled
}
