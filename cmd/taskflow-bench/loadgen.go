package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
)

// loadResult is what `taskflow loadgen --json` prints.
type loadResult struct {
	Mode        string  `json:"mode"` // "max" (closed loop) or "rate" (open loop)
	TargetRate  float64 `json:"target_rate,omitempty"`
	Concurrency int     `json:"concurrency"`
	Duration    float64 `json:"duration_s"`
	Sent        int64   `json:"sent"`
	OK          int64   `json:"ok"`
	Errors      int64   `json:"errors"`
	Late        int64   `json:"late,omitempty"` // open loop: sends that started > 1 ms after their slot
	Rate        float64 `json:"submits_per_sec"`
	P50ms       float64 `json:"p50_ms"`
	P90ms       float64 `json:"p90_ms"`
	P99ms       float64 `json:"p99_ms"`
	P999ms      float64 `json:"p999_ms"`
	Maxms       float64 `json:"max_ms"`
	FirstError  string  `json:"first_error,omitempty"`
}

func newLoadgenCommand(m *Main) *cobra.Command {
	{
		var (
			rate        float64
			duration    time.Duration
			concurrency int
			asJSON      bool
			taskType    string
			size        int
		)
		cmd := &cobra.Command{
			Use:   "loadgen",
			Short: "Load-test the submit endpoint: closed loop at max speed, or open loop at --rate (latency measured from each request's slot)",
			Args:  cobra.NoArgs,
		}
		f := cmd.Flags()
		f.Float64Var(&rate, "rate", 0, "submits per second (open loop); 0 = as fast as --concurrency allows")
		f.DurationVar(&duration, "duration", 10*time.Second, "how long to send")
		f.IntVar(&concurrency, "concurrency", 64, "concurrent connections")
		f.BoolVar(&asJSON, "json", false, "print one JSON object")
		f.StringVar(&taskType, "type", "summarize", "task type to submit (summarize uses POST /api/v1/tasks/summarize)")
		f.IntVar(&size, "size", 300, "content bytes per task")
		return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, _ []string) error {
			if concurrency < 1 || duration <= 0 || rate < 0 {
				return fmt.Errorf("--concurrency must be ≥ 1, --duration > 0, --rate ≥ 0")
			}
			res, err := runLoad(ctx, c, loadSpec{rate: rate, duration: duration, concurrency: concurrency, taskType: taskType, size: size})
			if err != nil {
				return err
			}
			if asJSON {
				b, _ := json.Marshal(res)
				_, err := fmt.Fprintln(m.Stdout, string(b))
				return err
			}
			_, err = fmt.Fprintf(m.Stdout, "%s: %d sent, %d ok, %d errors in %.1fs = %.0f submits/s; latency p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms\n",
				res.Mode, res.Sent, res.OK, res.Errors, res.Duration, res.Rate, res.P50ms, res.P90ms, res.P99ms, res.P999ms, res.Maxms)
			if res.FirstError != "" {
				fmt.Fprintln(m.Stderr, "first error:", res.FirstError)
			}
			return err
		})
	}
}

type loadSpec struct {
	rate        float64
	duration    time.Duration
	concurrency int
	taskType    string
	size        int
}

func runLoad(ctx context.Context, c *apiClient, spec loadSpec) (loadResult, error) {
	tr := &http.Transport{MaxIdleConns: spec.concurrency * 2, MaxIdleConnsPerHost: spec.concurrency * 2, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	path := "/api/v1/tasks"
	body := map[string]any{"task_type": spec.taskType}
	content := strings.Repeat("Load test sentence number one. ", spec.size/31+1)[:spec.size]
	if spec.taskType == "summarize" {
		path = "/api/v1/tasks/summarize"
		body = map[string]any{"content": content}
	} else {
		body["content"] = content
	}
	payload, _ := json.Marshal(body)

	return drive(ctx, spec.rate, spec.duration, spec.concurrency, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, "POST", c.base+path, bytes.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			return fmt.Errorf("HTTP %d", res.StatusCode)
		}
		return nil
	}), nil
}

// drive calls send from concurrency senders for duration: as fast as they
// go (rate 0, closed loop), or at rate calls per second (open loop: call
// k is due at start + k/rate, and its latency counts from then, not from
// when a sender became free — no coordinated omission). sender i of
// concurrency is in ctx (senderIndex).
func drive(ctx context.Context, rate float64, duration time.Duration, concurrency int, send func(ctx context.Context) error) loadResult {
	var sent, ok, errs, late atomic.Int64
	var firstErr atomic.Value
	lats := make([][]time.Duration, concurrency)
	call := func(i int, slot time.Time) {
		sent.Add(1)
		if err := send(context.WithValue(ctx, senderKey{}, i)); err != nil {
			if ctx.Err() == nil {
				errs.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
			return
		}
		ok.Add(1)
		lats[i] = append(lats[i], time.Since(slot))
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	end := start.Add(duration)
	var wg sync.WaitGroup
	mode := "max"
	if rate == 0 {
		for i := range concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(end) && ctx.Err() == nil {
					call(i, time.Now())
				}
			}()
		}
	} else {
		mode = "rate"
		slots := make(chan time.Time, concurrency*4)
		for i := range concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for slot := range slots {
					if time.Since(slot) > time.Millisecond {
						late.Add(1)
					}
					call(i, slot)
				}
			}()
		}
		interval := time.Duration(float64(time.Second) / rate)
		for k := 0; ; k++ {
			slot := start.Add(time.Duration(k) * interval)
			if !slot.Before(end) || ctx.Err() != nil {
				break
			}
			if d := time.Until(slot); d > 0 {
				time.Sleep(d)
			}
			slots <- slot
		}
		close(slots)
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		i := int(p * float64(len(all)-1))
		return float64(all[i].Microseconds()) / 1000
	}
	res := loadResult{Mode: mode, TargetRate: rate, Concurrency: concurrency, Duration: elapsed.Seconds(),
		Sent: sent.Load(), OK: ok.Load(), Errors: errs.Load(), Late: late.Load(),
		Rate: float64(ok.Load()) / elapsed.Seconds(), P50ms: pct(0.5), P90ms: pct(0.9), P99ms: pct(0.99), P999ms: pct(0.999), Maxms: pct(1)}
	if v, _ := firstErr.Load().(string); v != "" {
		res.FirstError = v
	}
	return res
}

// senderKey holds the index of the sender a call runs on.
type senderKey struct{}

// senderIndex is the index (0..concurrency-1) of the sender running a call.
func senderIndex(ctx context.Context) int { i, _ := ctx.Value(senderKey{}).(int); return i }
