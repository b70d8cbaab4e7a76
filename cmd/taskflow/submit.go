package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func init() {
	register("submit", func(m *Main) *cobra.Command {
		var (
			taskType, params, priority string
			queue, limitKey            string
			wait                       bool
			waitFor                    time.Duration
			download                   string
			maxRetries                 int
			timeout                    float64
			idemKey, uniqueKey, batch  string
			uniqueFor                  time.Duration
		)
		cmd := &cobra.Command{
			Use:   "submit [FILE|-]",
			Short: "Submit a task (default: summarize the text of FILE or stdin); --wait shows progress and prints the result",
			Long: `Submit a task (default: summarize the text of FILE or stdin); --wait shows progress and prints the result.

--idempotency-key K sends the Idempotency-Key header: running the same command again with K
answers the first task and creates none (for 24 h; see docs/api.md). --unique-key K
(--unique-for 1h) answers the task of yours that holds K while it is unfinished (or within
the window) instead of creating one; the id printed is then the existing task's.

--batch FILE (or - for stdin) submits JSON lines, each a POST /api/v1/tasks body
({"task_type": "...", "params": {...}, "unique_key": "..."}), up to 1000 a request, and prints one
line per input line: LINE<TAB>created|duplicate<TAB>TASK_ID, or LINE<TAB>invalid<TAB>FIELD: MESSAGE.
It exits 1 when a line was refused.`,
			Args: cobra.MaximumNArgs(1),
		}
		cmd.Flags().StringVar(&taskType, "type", "summarize", "task type")
		cmd.Flags().StringVar(&params, "params", "", "handler params as a JSON object")
		cmd.Flags().StringVar(&priority, "priority", "", "high, normal or low")
		cmd.Flags().StringVar(&queue, "queue", "", "the named queue (unset: the type's default queue, else default)")
		cmd.Flags().StringVar(&limitKey, "limit-key", "", "the key per-key limits count the task against (a tenant, a customer)")
		cmd.Flags().IntVar(&maxRetries, "max-retries", 0, "retries before the DLQ (unset: the server's MAX_RETRIES, 3)")
		cmd.Flags().Float64Var(&timeout, "timeout", 0, "seconds one attempt may run, fractions allowed (unset: the server's TASKFLOW_TASK_TIMEOUT)")
		cmd.Flags().BoolVar(&wait, "wait", false, "wait until the task ends, showing progress, then print its result")
		cmd.Flags().DurationVar(&waitFor, "wait-timeout", 10*time.Minute, "give up waiting after this long")
		cmd.Flags().StringVar(&download, "download", "", "with --wait: save the result's file (its file_url) into this directory")
		cmd.Flags().StringVar(&idemKey, "idempotency-key", "", "Idempotency-Key: a repeat with this key and the same request answers the first task (24 h)")
		cmd.Flags().StringVar(&uniqueKey, "unique-key", "", "answer your unfinished task with this key instead of creating one")
		cmd.Flags().DurationVar(&uniqueFor, "unique-for", 0, "with --unique-key: hold the key this long after the submit even once the task finished (e.g. 1h)")
		cmd.Flags().StringVar(&batch, "batch", "", "submit the JSON lines of FILE (- for stdin), one task a line")
		_ = cmd.RegisterFlagCompletionFunc("type", completeTaskTypes(m))
		_ = cmd.RegisterFlagCompletionFunc("priority", cobra.FixedCompletions([]string{"high", "normal", "low"}, cobra.ShellCompDirectiveNoFileComp))
		return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, args []string) error {
			// a flag the user typed is sent as typed or refused here, never
			// replaced by the server's default
			if cmd.Flags().Changed("max-retries") && maxRetries < 0 {
				return fmt.Errorf("--max-retries %d: must be 0 or more", maxRetries)
			}
			if cmd.Flags().Changed("timeout") && !(timeout > 0) {
				return fmt.Errorf("--timeout %v: must be more than 0 seconds", timeout)
			}
			if waitFor <= 0 {
				return fmt.Errorf("--wait-timeout %s: must be more than 0", waitFor)
			}
			if download != "" && !wait {
				return errors.New("--download needs --wait (the file exists once the task completed)")
			}
			if download != "" {
				if st, err := os.Stat(download); err != nil || !st.IsDir() {
					return fmt.Errorf("--download %s: not a directory", download)
				}
			}
			if cmd.Flags().Changed("unique-for") && uniqueKey == "" {
				return errors.New("--unique-for needs --unique-key")
			}
			if uniqueFor < 0 {
				return fmt.Errorf("--unique-for %s: must not be negative", uniqueFor)
			}
			if batch != "" {
				for _, f := range []string{"wait", "download", "params", "type", "priority", "max-retries", "timeout", "unique-key", "unique-for"} {
					if cmd.Flags().Changed(f) {
						return fmt.Errorf("--batch takes every task's fields from its lines: --%s does not apply", f)
					}
				}
				if len(args) > 0 {
					return errors.New("--batch FILE names the input; give no other FILE")
				}
				return submitBatch(ctx, m, c, batch, idemKey)
			}
			body := map[string]any{"task_type": taskType}
			content, src, err := readContent(m, args, taskType == "summarize" || (params == "" && len(args) > 0))
			if err != nil {
				return err
			}
			if src != "" {
				body["content"] = content
			}
			if params != "" {
				var p map[string]any
				if err := json.Unmarshal([]byte(params), &p); err != nil {
					return fmt.Errorf("--params: not a JSON object: %w", err)
				}
				body["params"] = p
			}
			if priority != "" {
				body["priority"] = priority
			}
			if cmd.Flags().Changed("max-retries") {
				body["max_retries"] = maxRetries
			}
			if queue != "" {
				body["queue"] = queue
			}
			if limitKey != "" {
				body["limit_key"] = limitKey
			}
			if cmd.Flags().Changed("timeout") {
				body["timeout"] = timeout
			}
			if uniqueKey != "" {
				body["unique_key"] = uniqueKey
			}
			if uniqueFor > 0 {
				body["unique_for"] = uniqueFor.Seconds()
			}
			var hdr http.Header
			if idemKey != "" {
				hdr = http.Header{"Idempotency-Key": {idemKey}}
			}
			var sub struct {
				TaskID    string `json:"task_id"`
				State     string `json:"state"`
				Duplicate bool   `json:"duplicate"`
			}
			raw, rh, err := c.sendWith(ctx, "POST", "/api/v1/tasks", body, hdr)
			if err == nil {
				err = json.Unmarshal(raw, &sub)
			}
			if err != nil {
				if src != "" {
					return fmt.Errorf("%s: %w", src, err)
				}
				return err
			}
			if sub.Duplicate {
				fmt.Fprintf(m.Stderr, "task %s holds unique key %q (%s): nothing new was created\n", sub.TaskID, uniqueKey, sub.State)
			}
			if rh.Get("Idempotent-Replayed") == "true" {
				fmt.Fprintf(m.Stderr, "idempotency key %q was used before: this is the first submit's answer\n", idemKey)
			}
			if !wait {
				_, err := fmt.Fprintln(m.Stdout, sub.TaskID)
				return err
			}
			fmt.Fprintf(m.Stderr, "task %s submitted\n", sub.TaskID)
			t, err := waitTask(ctx, m, c, sub.TaskID, waitFor)
			if err != nil || download == "" {
				return err
			}
			return downloadResultFile(ctx, m, c, t, download)
		})
	})
}

// readContent reads the task content from FILE, or stdin for "-" or no
// argument when required.
func readContent(m *Main, args []string, required bool) (string, string, error) {
	var b []byte
	var src string
	var err error
	switch {
	case len(args) == 1 && args[0] != "-":
		src = args[0]
		b, err = os.ReadFile(src)
		if err != nil {
			return "", src, fmt.Errorf("%s: %w", src, err)
		}
	case len(args) == 1 || required:
		src = "stdin"
		b, err = io.ReadAll(io.LimitReader(m.Stdin, 64<<20))
		if err != nil {
			return "", src, fmt.Errorf("stdin: %w", err)
		}
	default:
		return "", "", nil
	}
	if strings.TrimSpace(string(b)) == "" {
		if src == "stdin" {
			return "", src, errors.New("stdin: no content to submit (pipe a text in, or name a FILE)")
		}
		return "", src, fmt.Errorf("%s: no content to submit (the file is empty)", src)
	}
	return string(b), src, nil
}

// waitTask polls the task until it ends, printing each state change with
// the elapsed time to stderr, and the notifications the session's polls
// deliver (the next-response channel), then prints the result (or the
// error) and returns the completed task.
func waitTask(ctx context.Context, m *Main, c *apiClient, id string, limit time.Duration) (taskDoc, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	last := ""
	lastPrint := start
	toldWaiting := false
	told := false                      // a notification about the task was printed
	const stillEvery = 5 * time.Second // a line even when nothing changes
	delay := 50 * time.Millisecond
	for {
		var t taskDoc
		if err := c.do(ctx, "GET", "/api/v1/tasks/"+id, nil, &t); err != nil {
			if ctx.Err() != nil {
				return t, &ExitError{Code: 3, Err: fmt.Errorf("gave up waiting for task %s after %s (state %s)", id, limit, last)}
			}
			return t, err
		}
		if shown := t.shownState(); shown != last {
			extra := ""
			if t.RetryCount > 0 {
				extra = fmt.Sprintf(" retry %d/%d", t.RetryCount, t.MaxRetries)
			}
			if t.LastError != "" && t.State != "COMPLETED" {
				extra += " last error: " + short(t.LastError, 80)
			}
			fmt.Fprintf(m.Stderr, "[%6.1fs] %s%s\n", time.Since(start).Seconds(), shown, extra)
			last = shown
			lastPrint = time.Now()
			delay = 50 * time.Millisecond
		}
		if t.WaitingFor != nil && !toldWaiting {
			fmt.Fprintf(m.Stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), t.WaitingFor.Message)
			toldWaiting, lastPrint = true, time.Now()
		} else if time.Since(lastPrint) >= stillEvery {
			fmt.Fprintf(m.Stderr, "[%6.1fs] still %s\n", time.Since(start).Seconds(), last)
			lastPrint = time.Now()
		}
		told = printNotes(m, start, t, id) || told
		switch t.State {
		case "COMPLETED", "DLQ", "CANCELLED":
			if t.SessionID != "" && !told {
				// the task's notification is written just after its state
				// (the outcome consumer's next step): look for it a little
				// longer, so a task done at once is not reported without it
				awaitNote(ctx, m, c, start, id)
			}
		}
		switch t.State {
		case "COMPLETED":
			return t, printResult(m, c.base, t.Result)
		case "DLQ", "CANCELLED":
			return t, &ExitError{Code: 2, Err: fmt.Errorf("task %s ended %s: %s %s", id, t.State, t.ErrorType, t.LastError)}
		}
		select {
		case <-ctx.Done():
			return t, &ExitError{Code: 3, Err: fmt.Errorf("gave up waiting for task %s after %s (state %s)", id, limit, last)}
		case <-time.After(delay):
		}
		delay = min(delay*2, time.Second)
	}
}

// printNotes prints the notifications delivered with t and reports
// whether one was about task id.
func printNotes(m *Main, start time.Time, t taskDoc, id string) bool {
	about := false
	for _, n := range t.Notifications {
		fmt.Fprintf(m.Stderr, "[%6.1fs] notification: %s\n", time.Since(start).Seconds(), n.Message)
		about = about || n.TaskID == id
	}
	return about
}

// noteWait is how long waitTask looks for the notification of a task that
// has ended before it gives up on it.
const noteWait = 2 * time.Second

// awaitNote reads the task again, printing what is delivered, until a
// notification about it comes or noteWait passes.
func awaitNote(ctx context.Context, m *Main, c *apiClient, start time.Time, id string) {
	ctx, cancel := context.WithTimeout(ctx, noteWait)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
		var t taskDoc
		if err := c.do(ctx, "GET", "/api/v1/tasks/"+id, nil, &t); err != nil {
			return
		}
		if printNotes(m, start, t, id) {
			return
		}
	}
}

// printResult prints a summarize task's summary as text, any other result
// as JSON, and says where a result's file is (a file in taskflow's artifact
// store as its URL on the API at base).
func printResult(m *Main, base string, raw json.RawMessage) error {
	var r struct {
		Summary    string `json:"summary"`
		Summarizer string `json:"summarizer"`
		Model      string `json:"model"`
		FileURL    string `json:"file_url"`
	}
	_ = json.Unmarshal(raw, &r)
	if r.FileURL != "" {
		where := r.FileURL
		if p, ok := strings.CutPrefix(where, "file://"); ok {
			where = p + " (written by the service, on the machine it runs on)"
		} else if strings.HasPrefix(where, "/api/") {
			where = base + where + " (download it with this session's token, or the admin key)"
		}
		fmt.Fprintf(m.Stderr, "file: %s\n", where)
	}
	if r.Summary != "" && r.Summarizer != "" {
		by := r.Summarizer
		if r.Model != "" {
			by += ", " + r.Model
		}
		if by != "" {
			fmt.Fprintf(m.Stderr, "summary by %s:\n", by)
		}
		_, err := fmt.Fprintln(m.Stdout, r.Summary)
		return err
	}
	_, err := fmt.Fprintln(m.Stdout, string(raw))
	return err
}

// downloadResultFile saves the file a completed task's result links
// (file_url on this API) into dir, under the file's own name, and says
// where on stderr. A result without a file is an error: --download was
// asked for one.
func downloadResultFile(ctx context.Context, m *Main, c *apiClient, t taskDoc, dir string) error {
	var r struct {
		FileURL string `json:"file_url"`
	}
	_ = json.Unmarshal(t.Result, &r)
	if !strings.HasPrefix(r.FileURL, "/api/") {
		if r.FileURL == "" {
			return fmt.Errorf("--download: task %s's result has no file", t.ID)
		}
		return fmt.Errorf("--download: task %s's file is not served by the API: %s", t.ID, r.FileURL)
	}
	name := path.Base(r.FileURL)
	if name == "." || name == "/" || name == ".." {
		return fmt.Errorf("--download: unexpected file_url %q", r.FileURL)
	}
	data, err := c.get(ctx, r.FileURL)
	if err != nil {
		return fmt.Errorf("--download: %w", err)
	}
	dst := filepath.Join(dir, name)
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		return fmt.Errorf("--download: %w", err)
	}
	fmt.Fprintf(m.Stderr, "saved %s (%d bytes)\n", dst, len(data))
	return nil
}
