// Package builtin holds the task types every taskflow process serves:
// noop (returns at once) and sleep (waits, then optionally fails), for
// benchmarks, demos and tests. They are registered through the public
// package taskflow, as a user's own types are (Register), with what their
// declarations (Types) say; Options turns any in-process declaration into
// the public registration's options (summarize's and plan's too).
package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/internal/tasktypes"
	"github.com/taskflow/taskflow/task"
)

// Task type names.
const (
	TypeNoop  = "noop"
	TypeSleep = "sleep"
)

// Register adds noop and sleep to r (a taskflow.Worker or Mux), declared
// as Types says.
func Register(r taskflow.Registrar) {
	handlers := map[string]taskflow.HandlerFunc{TypeNoop: Noop, TypeSleep: Sleep}
	for _, t := range Types() {
		r.Handle(t.Name, handlers[t.Name], Options(t)...)
	}
}

// Options are the public registration's options declaring t: its
// description, params (or JSON Schema), submit check and notification.
func Options(t tasktypes.Type) []taskflow.TypeOption {
	opts := []taskflow.TypeOption{taskflow.Describe(t.Description), taskflow.Notify(t.Notify)}
	if t.JSONSchema != nil {
		b, err := json.Marshal(t.JSONSchema)
		if err != nil {
			panic(fmt.Sprintf("builtin: %s: params schema: %v", t.Name, err)) // plain values only
		}
		opts = append(opts, func(ti *taskflow.TypeInfo) { ti.JSONSchema, ti.Params = b, t.Params })
	} else if t.Params.Fields != nil || t.Params.AllowUnknown {
		opts = append(opts, taskflow.Params(t.Params))
	}
	if t.Check != nil {
		opts = append(opts, taskflow.Check(t.Check))
	}
	return opts
}

// Noop returns {} at once.
func Noop(ctx context.Context, t *task.Task) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}

// maxSleepMS is the longest sleep (a day).
const maxSleepMS = 86_400_000

// SleepParams are the params of a sleep task.
type SleepParams struct {
	// DurationMS is how long to sleep (0..86,400,000).
	DurationMS int64 `json:"duration_ms"`
	// Fail, when set, is how the task fails after sleeping: "transient"
	// (retried as ServiceUnavailable), "permanent" (straight to the
	// DLQ as PermanentFailure), "timeout" (a network timeout), "panic",
	// or "cancel".
	Fail string `json:"fail,omitempty"`
}

// ParseSleepParams decodes and checks sleep params (unknown fields are
// refused so a typo does not silently sleep 0 ms).
func ParseSleepParams(raw json.RawMessage) (SleepParams, error) {
	var p SleepParams
	if len(bytes.TrimSpace(raw)) == 0 {
		return p, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("sleep params: %w", err)
	}
	if dec.More() {
		return p, errors.New("sleep params: trailing data after the JSON object")
	}
	if p.DurationMS < 0 || p.DurationMS > maxSleepMS {
		return p, fmt.Errorf("sleep params: duration_ms %d must be within [0, %d]", p.DurationMS, maxSleepMS)
	}
	if p.Fail != "" && !slices.Contains(sleepFailKinds, p.Fail) {
		return p, fmt.Errorf("sleep params: fail %q must be one of %s", p.Fail, strings.Join(sleepFailKinds, ", "))
	}
	return p, nil
}

// Sleep waits duration_ms (or until its context ends), then succeeds with
// {"slept_ms": n} or fails as params.fail says.
func Sleep(ctx context.Context, t *task.Task) (json.RawMessage, error) {
	p, err := ParseSleepParams(t.Params)
	if err != nil {
		return nil, task.Permanent(err)
	}
	if p.DurationMS > 0 {
		tm := time.NewTimer(time.Duration(p.DurationMS) * time.Millisecond)
		defer tm.Stop()
		select {
		case <-tm.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	switch p.Fail {
	case "transient":
		return nil, task.Transient(task.ErrTypeServiceUnavailable, errors.New("sleep: asked to fail transiently"))
	case "permanent":
		return nil, task.Permanent(errors.New("sleep: asked to fail permanently"))
	case "timeout":
		return nil, fmt.Errorf("sleep: asked to time out: %w", context.DeadlineExceeded)
	case "panic":
		panic("sleep: asked to panic")
	case "cancel":
		return nil, task.Cancel(errors.New("sleep: asked to cancel"))
	}
	return json.RawMessage(fmt.Sprintf(`{"slept_ms":%d}`, p.DurationMS)), nil
}
