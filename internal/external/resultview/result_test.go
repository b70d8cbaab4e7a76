package resultview

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// TestReadPendingGivesQueuePosition: a PENDING task's answer is its place
// in its priority's queue (1 = next), which moves up as the tasks ahead
// are taken; nothing of a running or finished task is in it.
func TestReadPendingGivesQueuePosition(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	var normal []string
	for range 3 {
		normal = append(normal, b.enqueue(t, store.EnqueueRequest{}).ID)
	}
	high := b.enqueue(t, store.EnqueueRequest{Priority: task.PriorityHigh}).ID
	low := b.enqueue(t, store.EnqueueRequest{Priority: task.PriorityLow}).ID

	for i, id := range normal {
		v := b.read(t, id)
		require.Equal(t, "pending", v.Status)
		require.Equal(t, task.StatePending, v.State)
		require.Equal(t, "redis", v.Source)
		require.Equal(t, "report.generate", v.TaskType)
		require.Equal(t, "The task is waiting to be picked up.", v.Message)
		require.NotNil(t, v.QueuePos, "task %d of the normal queue", i+1)
		require.EqualValues(t, i+1, *v.QueuePos)
		require.Nil(t, v.Result)
		require.Nil(t, v.Error)
		require.Nil(t, v.Progress)
		require.Nil(t, v.ETASeconds)
		require.Nil(t, v.CompletedAt)
		require.Equal(t, t0, v.CreatedAt.UTC())
	}
	for _, id := range []string{high, low} {
		v := b.read(t, id)
		require.NotNil(t, v.QueuePos, "the only task of its priority's queue")
		require.EqualValues(t, 1, *v.QueuePos)
	}

	// Only the normal queue left: its head is taken, and the tasks behind
	// it move up.
	for _, id := range []string{high, low} {
		_, err := b.st.Cancel(b.ctx, id)
		require.NoError(t, err)
	}
	first := b.fetchOne(t)
	require.Equal(t, normal[0], first.ID, "first in, first out")
	for i, id := range normal[1:] {
		v := b.read(t, id)
		require.NotNil(t, v.QueuePos)
		require.EqualValues(t, i+1, *v.QueuePos, "moved up once the task ahead was taken")
	}
	require.Nil(t, b.read(t, first.ID).QueuePos, "an ACTIVE task has no queue position")
}

// TestReadPendingRetryGivesRetryQueuePosition: a task waiting for its
// retry (retry_count > 0) is found in the retry queue.
func TestReadPendingRetryGivesRetryQueuePosition(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	var failed []string
	for range 2 {
		tk := b.active(t, store.EnqueueRequest{})
		_, err := b.st.Fail(b.ctx, tk.ID, tk.Lease, store.Failure{ErrorType: "UPSTREAM", Message: "503", Attempt: 1})
		require.NoError(t, err)
		failed = append(failed, tk.ID)
		b.clk.Advance(time.Second)
	}
	b.enqueue(t, store.EnqueueRequest{}) // a fresh task in the primary queue
	n, err := b.st.PromoteDue(b.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	inRetry, _, err := b.st.QueueContents(b.ctx, store.QueueRetry, store.ListOptions{})
	require.NoError(t, err)
	require.ElementsMatch(t, failed, inRetry)
	for _, id := range failed {
		v := b.read(t, id)
		require.Equal(t, "pending", v.Status)
		require.NotNil(t, v.QueuePos, "a retry waits in the retry queue")
		require.EqualValues(t, slices.Index(inRetry, id)+1, *v.QueuePos)
	}
}

// TestReadDelayedPendingHasNoQueuePosition: a PENDING task scheduled for
// later is in no queue yet, so it has no position.
func TestReadDelayedPendingHasNoQueuePosition(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.enqueue(t, store.EnqueueRequest{})
	later := b.enqueue(t, store.EnqueueRequest{RunAt: t0.Add(time.Hour)})
	v := b.read(t, later.ID)
	require.Equal(t, "pending", v.Status)
	require.Nil(t, v.QueuePos)
}

// TestQueueScanBoundsThePositionSearch: the position search stops after
// QueueScan entries (a task deeper has no position), and the default
// bound (10000) reaches past the first thousand.
func TestQueueScanBoundsThePositionSearch(t *testing.T) {
	t.Parallel()
	b := setup(t, options{cfg: Config{QueueScan: 1000}})
	reqs := make([]store.EnqueueRequest, 1001)
	for i := range reqs {
		reqs[i] = store.EnqueueRequest{Type: "report.generate"}
	}
	ts, err := b.st.EnqueueBatch(b.ctx, reqs)
	require.NoError(t, err)
	ids, total, err := b.st.QueueContents(b.ctx, store.QueuePrimary, store.ListOptions{Offset: 999, Limit: 2})
	require.NoError(t, err)
	require.EqualValues(t, len(ts), total)
	require.Len(t, ids, 2)

	v := b.read(t, ids[0])
	require.NotNil(t, v.QueuePos, "within the bound")
	require.EqualValues(t, 1000, *v.QueuePos)
	require.Nil(t, b.read(t, ids[1]).QueuePos, "deeper than QueueScan")

	whole := New(b.st, Config{Clock: b.clk})
	v, err = whole.Read(b.ctx, ids[1])
	require.NoError(t, err)
	require.NotNil(t, v.QueuePos, "the default bound reaches it")
	require.EqualValues(t, 1001, *v.QueuePos)
}

// TestQueueScanBelowAThousandBoundsTheSearch: QueueScan is "at most
// QueueScan entries" (Config, position): with QueueScan 2 the third task
// of a queue is deeper than the search and has no position (the search
// reads its pages up to the bound, not whole pages of 1000).
func TestQueueScanBelowAThousandBoundsTheSearch(t *testing.T) {
	t.Parallel()
	b := setup(t, options{cfg: Config{QueueScan: 2}})
	var ids []string
	for range 3 {
		ids = append(ids, b.enqueue(t, store.EnqueueRequest{}).ID)
	}
	v := b.read(t, ids[1])
	require.NotNil(t, v.QueuePos)
	require.EqualValues(t, 2, *v.QueuePos)
	require.Nil(t, b.read(t, ids[2]).QueuePos, "deeper than QueueScan 2")
}

// TestReadManuallyRetriedTaskGivesItsQueuePosition: a dead-lettered task
// retried by hand (store.Retry) is PENDING at the end of the retry queue,
// where the next fetch takes it from; its answer gives that position,
// though a manual retry resets its retry count to 0.
func TestReadManuallyRetriedTaskGivesItsQueuePosition(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	tk := b.active(t, store.EnqueueRequest{})
	out, err := b.st.Fail(b.ctx, tk.ID, tk.Lease, store.Failure{ErrorType: "INVALID_PARAMS", Message: "no", Permanent: true, Attempt: 1})
	require.NoError(t, err)
	require.Equal(t, task.StateDLQ, out.State)
	require.NoError(t, b.st.Retry(b.ctx, tk.ID))
	inRetry, _, err := b.st.QueueContents(b.ctx, store.QueueRetry, store.ListOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{tk.ID}, inRetry, "the task waits in the retry queue")

	v := b.read(t, tk.ID)
	require.Equal(t, "pending", v.Status)
	require.NotNil(t, v.QueuePos, "a pending task in a queue has a position")
	require.EqualValues(t, 1, *v.QueuePos)
	require.Equal(t, tk.ID, b.fetchOne(t).ID, "and it is the next taken")
}

// TestReadPendingInANamedQueueGivesItsPosition: a PENDING task submitted
// to a named queue (EnqueueRequest.Queue) waits at its place in that
// queue; its answer gives it, as for the default queue's tasks
// (store.QueueContentsOf).
func TestReadPendingInANamedQueueGivesItsPosition(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	var ids []string
	for range 2 {
		ids = append(ids, b.enqueue(t, store.EnqueueRequest{Queue: "emails"}).ID)
	}
	for i, id := range ids {
		v := b.read(t, id)
		require.Equal(t, "pending", v.Status)
		require.NotNil(t, v.QueuePos, "task %d of queue emails", i+1)
		require.EqualValues(t, i+1, *v.QueuePos)
	}
}

// TestReadActiveGivesProgressAndETA: an ACTIVE task's answer carries the
// latest progress WriteProgress recorded and an ETA that counts down
// from the report by the injected clock, never below 0.
func TestReadActiveGivesProgressAndETA(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	tk := b.active(t, store.EnqueueRequest{Timeout: 300 * time.Second})
	at := b.clk.Now().Add(1500 * time.Microsecond) // sub-millisecond part: stored to the millisecond
	p := Progress{Percent: 40, Message: "halfway", ETASeconds: 10, ReportedBy: "svc-reports", At: at}
	require.NoError(t, WriteProgress(b.ctx, b.rdb, NewKeys(b.st.Namespace()), tk.ID, p, ProgressTTL))

	b.clk.Set(at.Add(4 * time.Second))
	v := b.read(t, tk.ID)
	require.Equal(t, "processing", v.Status)
	require.Equal(t, task.StateActive, v.State)
	require.Equal(t, "The task is being processed.", v.Message)
	require.NotNil(t, v.Progress)
	require.InDelta(t, p.Percent, v.Progress.Percent, 0)
	require.Equal(t, p.Message, v.Progress.Message)
	require.InDelta(t, p.ETASeconds, v.Progress.ETASeconds, 0)
	require.Equal(t, p.ReportedBy, v.Progress.ReportedBy)
	require.Equal(t, at.Truncate(time.Millisecond), v.Progress.At)
	require.Equal(t, time.UTC, v.Progress.At.Location())
	require.NotNil(t, v.ETASeconds)
	want := p.ETASeconds - b.clk.Now().Sub(v.Progress.At).Seconds()
	require.InDelta(t, want, *v.ETASeconds, 1e-9)
	require.Greater(t, *v.ETASeconds, 0.0)
	require.Nil(t, v.QueuePos)

	b.clk.Advance(time.Minute)
	v = b.read(t, tk.ID)
	require.NotNil(t, v.ETASeconds)
	require.Zero(t, *v.ETASeconds, "an estimate past due is 0, not negative")

	// A later report replaces the earlier one.
	p2 := Progress{Percent: 90, Message: "almost", ETASeconds: 3, ReportedBy: "svc-reports", At: b.clk.Now()}
	require.NoError(t, WriteProgress(b.ctx, b.rdb, NewKeys(b.st.Namespace()), tk.ID, p2, ProgressTTL))
	v = b.read(t, tk.ID)
	require.InDelta(t, p2.Percent, v.Progress.Percent, 0)
	require.Equal(t, p2.Message, v.Progress.Message)
	require.InDelta(t, p2.ETASeconds-b.clk.Now().Sub(v.Progress.At).Seconds(), *v.ETASeconds, 1e-9)
}

// TestReadActiveWithoutProgressCountsDownTheTimeout: without a progress
// report (or one without an estimate) an ACTIVE task's ETA is the
// attempt's timeout left since it started, by the injected clock; past
// the timeout, or without a timeout, there is none.
func TestReadActiveWithoutProgressCountsDownTheTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	timeout := 300 * time.Second
	tk := b.active(t, store.EnqueueRequest{Timeout: timeout})
	require.NotNil(t, tk.StartedAt)
	started := *tk.StartedAt

	b.clk.Set(started.Add(time.Minute))
	v := b.read(t, tk.ID)
	require.Nil(t, v.Progress)
	require.NotNil(t, v.ETASeconds)
	require.InDelta(t, (timeout - time.Minute).Seconds(), *v.ETASeconds, 1e-9)

	// A report without an estimate: the timeout still gives the ETA.
	require.NoError(t, WriteProgress(b.ctx, b.rdb, NewKeys(b.st.Namespace()), tk.ID,
		Progress{Percent: 10, Message: "started", At: b.clk.Now()}, ProgressTTL))
	v = b.read(t, tk.ID)
	require.NotNil(t, v.Progress)
	require.InDelta(t, 10, v.Progress.Percent, 0)
	require.NotNil(t, v.ETASeconds)
	require.InDelta(t, (timeout - time.Minute).Seconds(), *v.ETASeconds, 1e-9)

	b.clk.Set(started.Add(timeout + time.Second))
	require.Nil(t, b.read(t, tk.ID).ETASeconds, "past its timeout: no estimate")

	b.clk.Set(t0)
	b.enqueue(t, store.EnqueueRequest{Type: "untimed"})
	// the store's default timeout is the worker's: none is stored
	untimed := b.fetchOne(t)
	require.Zero(t, untimed.Timeout)
	b.clk.Advance(time.Second)
	require.Nil(t, b.read(t, untimed.ID).ETASeconds, "no timeout and no report: no estimate")
}

// TestReadCompletedGivesTheTaskHashResult: a COMPLETED task's result is
// the one in its hash, read from Redis, even when the result cache holds
// another; completed_at is set.
func TestReadCompletedGivesTheTaskHashResult(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.clk.Advance(2 * time.Second)
	tk := b.completed(t, store.EnqueueRequest{}, json.RawMessage(`{"summary":"from the hash"}`))
	b.cache(t, tk.ID, json.RawMessage(`{"summary":"from the cache"}`))
	v := b.read(t, tk.ID)
	require.Equal(t, "completed", v.Status)
	require.Equal(t, task.StateCompleted, v.State)
	require.Equal(t, "The task is complete.", v.Message)
	require.JSONEq(t, `{"summary":"from the hash"}`, string(v.Result))
	require.Equal(t, "redis", v.Source)
	require.NotNil(t, v.CompletedAt)
	require.True(t, tk.CompletedAt.Equal(*v.CompletedAt))
	require.Nil(t, v.Error)
	require.Nil(t, v.Progress)
}

// TestReadCompletedWithoutAResultInItsHashReadsTheCache: a COMPLETED task
// whose hash holds no result (none, or JSON null) is answered from the
// result cache (Keys.Cache), with source "cache".
func TestReadCompletedWithoutAResultInItsHashReadsTheCache(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	for _, stored := range []json.RawMessage{nil, json.RawMessage(`null`)} {
		tk := b.completed(t, store.EnqueueRequest{}, stored)
		require.True(t, len(tk.Result) == 0 || string(tk.Result) == "null", "the hash holds %q", tk.Result)
		cached := json.RawMessage(fmt.Sprintf(`{"summary":"cached for %s","rows":[1,2]}`, tk.ID))
		b.cache(t, tk.ID, cached)
		v := b.read(t, tk.ID)
		require.Equal(t, "completed", v.Status)
		require.JSONEq(t, string(cached), string(v.Result), "stored %q", stored)
		require.Equal(t, "cache", v.Source)
	}
}

// TestReadCompletedFallsBackWhenTheCacheIsGone: when the hash holds no
// result and the cache has expired, been deleted or is unreadable, the
// result comes from the archive (source "archive"); without an archive
// there is none, and the source stays "redis".
func TestReadCompletedFallsBackWhenTheCacheIsGone(t *testing.T) {
	t.Parallel()
	b := setup(t, options{archive: true})
	withoutArchive := New(b.st, Config{Clock: b.clk})
	k := NewKeys(b.st.Namespace())

	gone := map[string]func(id string){
		"expired": func(id string) {
			// an expiry time in the past: Redis drops the key as expired
			require.NoError(t, b.rdb.PExpireAt(b.ctx, k.Cache(id), time.Unix(1, 0)).Err())
		},
		"deleted": func(id string) { require.NoError(t, b.rdb.Del(b.ctx, k.Cache(id)).Err()) },
		"unreadable": func(id string) {
			require.NoError(t, b.rdb.Set(b.ctx, k.Cache(id), `{"result":`, time.Hour).Err())
		},
		"without a result": func(id string) {
			require.NoError(t, b.rdb.Set(b.ctx, k.Cache(id), `{"cached_at":"2026-03-01T12:00:00Z"}`, time.Hour).Err())
		},
	}
	for how, drop := range gone {
		tk := b.completed(t, store.EnqueueRequest{}, nil)
		b.cache(t, tk.ID, json.RawMessage(`{"summary":"cached"}`))
		require.Equal(t, "cache", b.read(t, tk.ID).Source, how)
		archived := *tk
		archived.Result = json.RawMessage(fmt.Sprintf(`{"summary":"archived %s"}`, how))
		require.NoError(t, b.arc.Put(b.ctx, &archived))
		drop(tk.ID)
		if how == "expired" {
			n, err := b.rdb.Exists(b.ctx, k.Cache(tk.ID)).Result()
			require.NoError(t, err)
			require.Zero(t, n, "the cache has expired")
		}

		v := b.read(t, tk.ID)
		require.Equal(t, "completed", v.Status, how)
		require.JSONEq(t, string(archived.Result), string(v.Result), how)
		require.Equal(t, "archive", v.Source, how)

		v, err := withoutArchive.Read(b.ctx, tk.ID)
		require.NoError(t, err)
		require.Nil(t, v.Result, how)
		require.Equal(t, "redis", v.Source, how)
	}
}

// TestReadFailedGivesTheErrorAndTheRetry: a FAILED task's answer is its
// error (code, message, the last record's details, the history) and that
// it will be retried, when.
func TestReadFailedGivesTheErrorAndTheRetry(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	tk := b.active(t, store.EnqueueRequest{MaxRetries: new(3)})
	retryAt := t0.Add(30 * time.Second)
	details := json.RawMessage(`{"upstream":"billing","status":503}`)
	out, err := b.st.Fail(b.ctx, tk.ID, tk.Lease, store.Failure{ErrorType: "UPSTREAM_UNAVAILABLE", Message: "billing answered 503",
		RetryAt: retryAt, Attempt: 1, Worker: "w1", Details: details})
	require.NoError(t, err)
	require.Equal(t, task.StateFailed, out.State)

	v := b.read(t, tk.ID)
	require.Equal(t, "failed", v.Status)
	require.Equal(t, task.StateFailed, v.State)
	require.Equal(t, "The task failed and will be retried.", v.Message)
	require.NotNil(t, v.Error)
	require.Equal(t, "UPSTREAM_UNAVAILABLE", v.Error.Code)
	require.Equal(t, "billing answered 503", v.Error.Message)
	require.Equal(t, 1, v.Error.RetryCount, "one attempt spent")
	require.Equal(t, 3, v.Error.MaxRetries)
	require.True(t, v.Error.WillRetry)
	require.NotNil(t, v.Error.RetryAt)
	require.True(t, retryAt.Equal(*v.Error.RetryAt), "retry at %s, got %s", retryAt, v.Error.RetryAt)
	require.Len(t, v.Error.History, 1)
	require.Equal(t, "UPSTREAM_UNAVAILABLE", v.Error.History[0].ErrorType)
	require.Equal(t, "billing answered 503", v.Error.History[0].Message)
	require.JSONEq(t, string(details), string(v.Error.Details), "the last record's details")
	require.Nil(t, v.Result)
}

// TestReadDLQGivesTheErrorForGood: a dead-lettered task is "failed" with
// state DLQ, its error, the history of every attempt (details of the
// last), and no retry coming.
func TestReadDLQGivesTheErrorForGood(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	tk := b.active(t, store.EnqueueRequest{MaxRetries: new(1)})
	_, err := b.st.Fail(b.ctx, tk.ID, tk.Lease, store.Failure{ErrorType: "TIMEOUT_UPSTREAM", Message: "first", Attempt: 1,
		Details: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	_, err = b.st.PromoteDue(b.ctx, 10)
	require.NoError(t, err)
	again := b.fetchOne(t)
	require.Equal(t, tk.ID, again.ID)
	out, err := b.st.Fail(b.ctx, tk.ID, again.Lease, store.Failure{ErrorType: "INVALID_PARAMS", Message: "quarter Q5 does not exist",
		Attempt: 2, Details: json.RawMessage(`{"field":"quarter"}`)})
	require.NoError(t, err)
	require.Equal(t, task.StateDLQ, out.State)

	v := b.read(t, tk.ID)
	require.Equal(t, "failed", v.Status, "failed covers the DLQ")
	require.Equal(t, task.StateDLQ, v.State)
	require.Equal(t, "The task failed for good.", v.Message)
	require.NotNil(t, v.Error)
	require.Equal(t, "INVALID_PARAMS", v.Error.Code)
	require.Equal(t, "quarter Q5 does not exist", v.Error.Message)
	require.False(t, v.Error.WillRetry)
	require.Len(t, v.Error.History, 2)
	require.Equal(t, []string{"TIMEOUT_UPSTREAM", "INVALID_PARAMS"},
		[]string{v.Error.History[0].ErrorType, v.Error.History[1].ErrorType})
	require.JSONEq(t, `{"field":"quarter"}`, string(v.Error.Details), "the last record's details")
}

// TestViewOfAFailureWithoutHistoryHasAnEmptyHistory: a failed task with no
// error history (an archived record, say) answers "history": [] rather
// than null, and no details.
func TestViewOfAFailureWithoutHistoryHasAnEmptyHistory(t *testing.T) {
	t.Parallel()
	r := New(setup(t, options{}).st, Config{})
	v := r.View(t.Context(), &task.Task{ID: "t-1", Type: "x", State: task.StateDLQ, ErrorType: "E", LastError: "m"}, "archive")
	require.NotNil(t, v.Error)
	require.NotNil(t, v.Error.History)
	require.Empty(t, v.Error.History)
	require.Nil(t, v.Error.Details)
	require.Equal(t, "archive", v.Source)
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"history":[]`)
	require.NotContains(t, string(raw), `"details"`)
}

// TestReadTimeoutSaysItIsStillRunning: a TIMEOUT task's answer says in
// words that it is taking longer and how to check on it (its type and
// id), with its latest progress.
func TestReadTimeoutSaysItIsStillRunning(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	tk := b.active(t, store.EnqueueRequest{Type: "video.render", Timeout: time.Minute})
	require.NoError(t, b.st.MarkTimeout(b.ctx, tk.ID, tk.Lease))
	v := b.read(t, tk.ID)
	require.Equal(t, "timeout", v.Status)
	require.Equal(t, task.StateTimeout, v.State)
	require.Contains(t, v.Message, "Your video.render task is taking longer than expected")
	require.Contains(t, v.Message, "The task is still running")
	require.Contains(t, v.Message, "'Show task status for "+tk.ID+"'")
	require.Nil(t, v.Progress, "no report yet")
	require.Nil(t, v.ETASeconds)

	require.NoError(t, WriteProgress(b.ctx, b.rdb, NewKeys(b.st.Namespace()), tk.ID,
		Progress{Percent: 70, Message: "encoding", At: b.clk.Now()}, ProgressTTL))
	v = b.read(t, tk.ID)
	require.NotNil(t, v.Progress)
	require.InDelta(t, 70, v.Progress.Percent, 0)
	require.Equal(t, "encoding", v.Progress.Message)
}

// TestReadCancelled: a cancelled task's answer says so and carries no
// result, error or position.
func TestReadCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	tk := b.enqueue(t, store.EnqueueRequest{})
	out, err := b.st.Cancel(b.ctx, tk.ID)
	require.NoError(t, err)
	require.Equal(t, store.Cancelled, out)
	v := b.read(t, tk.ID)
	require.Equal(t, "cancelled", v.Status)
	require.Equal(t, task.StateCancelled, v.State)
	require.Equal(t, "The task was cancelled.", v.Message)
	require.Nil(t, v.QueuePos)
	require.Nil(t, v.Result)
	require.Nil(t, v.Error)
}

// TestLookupOfAMissingTaskIsNotFound: a task in neither Redis nor the
// archive is task.ErrNotFound, with an archive and without.
func TestLookupOfAMissingTaskIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t, options{archive: true})
	for name, r := range map[string]*Results{"archive": b.r, "no archive": New(b.st, Config{})} {
		tk, _, err := r.Lookup(b.ctx, "never-submitted")
		require.ErrorIs(t, err, task.ErrNotFound, name)
		require.Nil(t, tk, name)
		_, err = r.Read(b.ctx, "never-submitted")
		require.ErrorIs(t, err, task.ErrNotFound, name)
	}
}

// TestReadFallsBackToTheArchive: a task that has left Redis after it was
// archived is read back from PostgreSQL (source "archive") with its
// result or its error; while it is still in Redis, Redis answers.
func TestReadFallsBackToTheArchive(t *testing.T) {
	t.Parallel()
	b := setup(t, options{archive: true})

	done := b.completed(t, store.EnqueueRequest{SessionID: "s1"}, json.RawMessage(`{"file_url":"file:///q4.csv"}`))
	require.NoError(t, b.arc.Put(b.ctx, done))
	tk, source, err := b.r.Lookup(b.ctx, done.ID)
	require.NoError(t, err)
	require.Equal(t, "redis", source, "still in Redis: Redis answers")
	require.Equal(t, done.ID, tk.ID)

	b.archiveAndForget(t, done.ID)
	tk, source, err = b.r.Lookup(b.ctx, done.ID)
	require.NoError(t, err)
	require.Equal(t, "archive", source)
	require.Equal(t, task.StateCompleted, tk.State)
	v := b.read(t, done.ID)
	require.Equal(t, "archive", v.Source)
	require.Equal(t, "completed", v.Status)
	require.JSONEq(t, `{"file_url":"file:///q4.csv"}`, string(v.Result))
	require.NotNil(t, v.CompletedAt)
	require.True(t, done.CompletedAt.Equal(*v.CompletedAt))
	require.True(t, done.CreatedAt.Equal(v.CreatedAt))

	failed := b.active(t, store.EnqueueRequest{SessionID: "s1"})
	_, err = b.st.Fail(b.ctx, failed.ID, failed.Lease, store.Failure{ErrorType: "INVALID_PARAMS", Message: "bad quarter", Permanent: true, Attempt: 1})
	require.NoError(t, err)
	b.archiveAndForget(t, failed.ID)
	v = b.read(t, failed.ID)
	require.Equal(t, "archive", v.Source)
	require.Equal(t, "failed", v.Status)
	require.Equal(t, task.StateDLQ, v.State)
	require.NotNil(t, v.Error)
	require.Equal(t, "INVALID_PARAMS", v.Error.Code)
	require.Equal(t, "bad quarter", v.Error.Message)
	require.Len(t, v.Error.History, 1)

	// Without an archive the same task is simply not found.
	_, err = New(b.st, Config{}).Read(b.ctx, done.ID)
	require.ErrorIs(t, err, task.ErrNotFound)
}

// TestLookupDoesNotHideARedisFailure: when Redis fails, Lookup says so
// rather than answering from the archive or calling the task missing.
func TestLookupDoesNotHideARedisFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, options{archive: true})
	done := b.completed(t, store.EnqueueRequest{}, json.RawMessage(`{"ok":true}`))
	require.NoError(t, b.arc.Put(b.ctx, done))

	broken := testredis.Another(t)
	require.NoError(t, broken.Close())
	st, err := store.New(broken, store.Config{Namespace: b.st.Namespace().String(), Clock: b.clk})
	require.NoError(t, err)
	r := New(st, Config{Archive: b.arc, Clock: b.clk})
	tk, source, err := r.Lookup(b.ctx, done.ID)
	require.Error(t, err)
	require.NotErrorIs(t, err, task.ErrNotFound)
	require.Equal(t, "redis", source)
	require.Nil(t, tk)
	_, err = r.Read(b.ctx, done.ID)
	require.Error(t, err)
	require.NotErrorIs(t, err, task.ErrNotFound)
}

// archivedTask is a finished task of session as the archive holds it.
func archivedTask(id, session string, state task.State, at time.Time) *task.Task {
	done := at
	return &task.Task{ID: id, Type: "report.generate", State: state, SessionID: session, Priority: task.PriorityNormal,
		Result: json.RawMessage(`{"summary":"` + id + `"}`), CreatedAt: at.Add(-time.Minute), UpdatedAt: at, CompletedAt: &done}
}

// TestArchivedListsOnlyTheSessionsTasks: Archived lists a session's
// archived tasks newest first, in the states asked for (nil: all), at most
// limit, and never another session's — not even one whose id starts the
// same.
func TestArchivedListsOnlyTheSessionsTasks(t *testing.T) {
	t.Parallel()
	b := setup(t, options{archive: true})
	mine, theirs, similar := "sess-1", "sess-2", "sess-10"
	var batch []*task.Task
	states := []task.State{task.StateCompleted, task.StateDLQ, task.StateCompleted, task.StateCancelled, task.StateCompleted, task.StateTimeout}
	var want []*task.Task // mine, oldest first
	for i, st := range states {
		tk := archivedTask(fmt.Sprintf("mine-%d", i), mine, st, t0.Add(time.Duration(i)*time.Minute))
		want = append(want, tk)
		batch = append(batch, tk)
	}
	for i, s := range []string{theirs, similar, ""} {
		// theirs are newer than all of mine
		for j, st := range []task.State{task.StateCompleted, task.StateDLQ} {
			batch = append(batch, archivedTask(fmt.Sprintf("other-%d-%d", i, j), s, st, t0.Add(time.Hour+time.Duration(j)*time.Minute)))
		}
	}
	require.NoError(t, b.arc.PutBatch(b.ctx, batch))
	slices.Reverse(want) // newest first

	idsOf := func(ts []*task.Task) []string {
		out := make([]string, len(ts))
		for i, tk := range ts {
			out[i] = tk.ID
		}
		return out
	}
	only := func(ss ...task.State) []string {
		out := []string{}
		for _, tk := range want {
			if len(ss) == 0 || slices.Contains(ss, tk.State) {
				out = append(out, tk.ID)
			}
		}
		return out
	}

	all, err := b.r.Archived(b.ctx, mine, nil, 100)
	require.NoError(t, err)
	require.Equal(t, only(), idsOf(all), "all of mine, newest first, none of theirs")
	for _, tk := range all {
		require.Equal(t, mine, tk.SessionID)
	}
	for _, f := range []Filter{FilterCompleted, FilterFailed, FilterTimeout, FilterPending} {
		got, err := b.r.Archived(b.ctx, mine, f.States(), 100)
		require.NoError(t, err)
		require.Equal(t, only(f.States()...), idsOf(got), "filter %s", f)
	}
	got, err := b.r.Archived(b.ctx, mine, nil, 2)
	require.NoError(t, err)
	require.Equal(t, only()[:2], idsOf(got), "the newest two")
	got, err = b.r.Archived(b.ctx, mine, FilterCompleted.States(), 1)
	require.NoError(t, err)
	require.Equal(t, only(task.StateCompleted)[:1], idsOf(got))

	got, err = b.r.Archived(b.ctx, theirs, nil, 100)
	require.NoError(t, err)
	require.Len(t, got, 2)
	for _, tk := range got {
		require.Equal(t, theirs, tk.SessionID)
	}
	got, err = b.r.Archived(b.ctx, "sess-unknown", nil, 100)
	require.NoError(t, err)
	require.Empty(t, got)
}

// TestArchivedWithoutAnArchiveIsEmpty: with no archive configured,
// Archived lists nothing and is no error.
func TestArchivedWithoutAnArchiveIsEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.completed(t, store.EnqueueRequest{SessionID: "s1"}, json.RawMessage(`{}`))
	got, err := b.r.Archived(b.ctx, "s1", nil, 100)
	require.NoError(t, err)
	require.Empty(t, got)
}

// TestConcurrentReadsSeeWholeProgressReports: Results is used by many
// requests at once; while reports are written (WriteProgress, one
// transaction), every read sees one report whole, never the fields of
// two.
func TestConcurrentReadsSeeWholeProgressReports(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	tk := b.active(t, store.EnqueueRequest{Timeout: time.Hour})
	k := NewKeys(b.st.Namespace())
	const writes = 200
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	wg.Go(func() {
		for i := 1; i <= writes; i++ {
			p := Progress{Percent: float64(i) / 2, Message: fmt.Sprintf("step %d", i), ETASeconds: float64(writes - i + 1),
				ReportedBy: fmt.Sprintf("svc-%d", i), At: b.clk.Now()}
			if err := WriteProgress(b.ctx, b.rdb, k, tk.ID, p, ProgressTTL); err != nil {
				errs <- err
				return
			}
		}
	})
	for range 4 {
		wg.Go(func() {
			for range writes / 2 {
				v, err := b.r.Read(b.ctx, tk.ID)
				if err != nil {
					errs <- err
					return
				}
				if v.Progress == nil {
					continue // before the first report
				}
				i := int(v.Progress.Percent * 2)
				if v.Progress.Message != fmt.Sprintf("step %d", i) || v.Progress.ReportedBy != fmt.Sprintf("svc-%d", i) ||
					v.Progress.ETASeconds != float64(writes-i+1) {
					errs <- fmt.Errorf("a torn report: %+v", *v.Progress)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	v := b.read(t, tk.ID)
	require.Equal(t, fmt.Sprintf("step %d", writes), v.Progress.Message, "the last report stays")
	require.Equal(t, fmt.Sprintf("svc-%d", writes), v.Progress.ReportedBy)
}
