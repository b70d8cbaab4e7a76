package resultview

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/task"
)

// statusNames are the status names of View.Status's doc, per state
// (failed covers the DLQ).
var statusNames = map[task.State]string{
	task.StatePending:   "pending",
	task.StateActive:    "processing",
	task.StateCompleted: "completed",
	task.StateFailed:    "failed",
	task.StateDLQ:       "failed",
	task.StateTimeout:   "timeout",
	task.StateCancelled: "cancelled",
}

// TestStatusOfEveryState: every task state has its lowercase status name,
// the DLQ's being failed; a state the package does not know passes
// through as it is.
func TestStatusOfEveryState(t *testing.T) {
	t.Parallel()
	for _, s := range task.States {
		want, ok := statusNames[s]
		require.True(t, ok, "state %s has no status name in this test: add it", s)
		require.Equal(t, want, StatusOf(s), "state %s", s)
	}
	require.Equal(t, "SOMETHING_NEW", StatusOf("SOMETHING_NEW"))
	require.Equal(t, "", StatusOf(""))
}

// acceptedFilters are the status_filter values ParseFilter documents:
// the filters, and "" for all.
var acceptedFilters = []string{"", "all", "pending", "processing", "completed", "failed", "timeout"}

// TestParseFilterAcceptsTheDocumentedFilters: each filter is accepted as
// itself, and "" means all.
func TestParseFilterAcceptsTheDocumentedFilters(t *testing.T) {
	t.Parallel()
	for _, s := range acceptedFilters {
		f, err := ParseFilter(s)
		require.NoError(t, err, "%q", s)
		if s == "" {
			require.Equal(t, FilterAll, f)
		} else {
			require.Equal(t, Filter(s), f)
		}
	}
	for _, f := range []Filter{FilterAll, FilterPending, FilterProcessing, FilterCompleted, FilterFailed, FilterTimeout} {
		require.Contains(t, acceptedFilters, string(f), "every Filter constant is accepted")
	}
}

// TestParseFilterRefusesOthersClearly: anything else — another case,
// spaces, a state name, cancelled — is refused with an error that quotes
// the value and names the filters.
func TestParseFilterRefusesOthersClearly(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"ALL", "Pending", " pending", "pending ", "PROCESSING", "active", "ACTIVE", "dlq", "DLQ",
		"cancelled", "waiting_for_service", "failed,completed", "x", "\x00", "null", "*"} {
		f, err := ParseFilter(s)
		require.Error(t, err, "%q", s)
		require.Equal(t, Filter(""), f, "%q", s)
		msg := err.Error()
		require.Contains(t, msg, "status_filter")
		require.Contains(t, msg, strconv.Quote(s), "the error quotes the value")
		for _, a := range acceptedFilters[1:] {
			require.Contains(t, msg, a, "the error names %s", a)
		}
	}
}

// TestFilterStatesMatchStatusOf: a filter selects exactly the states whose
// status it names (failed: FAILED and DLQ); all selects every state (nil).
func TestFilterStatesMatchStatusOf(t *testing.T) {
	t.Parallel()
	require.Nil(t, FilterAll.States())
	f, err := ParseFilter("")
	require.NoError(t, err)
	require.Nil(t, f.States())
	for _, s := range acceptedFilters[2:] {
		f, err := ParseFilter(s)
		require.NoError(t, err)
		var want []task.State
		for _, st := range task.States {
			if StatusOf(st) == s {
				want = append(want, st)
			}
		}
		require.NotEmpty(t, want, s)
		require.ElementsMatch(t, want, f.States(), "filter %s", s)
	}
	require.ElementsMatch(t, []task.State{task.StateFailed, task.StateDLQ}, FilterFailed.States())
	require.Nil(t, Filter("cancelled").States(), "not a filter: as all")
}

// TestItemOfSummarisesEachState: a list_user_tasks line carries the task's
// fields, its status, whether it came from the archive and a one-line
// summary in words for each state (a DLQ task's error, what a waiting
// task waits for).
func TestItemOfSummarisesEachState(t *testing.T) {
	t.Parallel()
	created, updated := t0, t0.Add(time.Minute)
	for _, c := range []struct {
		s    Summary
		want string
	}{
		{Summary{State: task.StateCompleted}, "completed; retrieve the result"},
		{Summary{State: task.StateFailed, ErrorType: "UPSTREAM_UNAVAILABLE"}, "failed (UPSTREAM_UNAVAILABLE), will retry"},
		{Summary{State: task.StateDLQ, ErrorType: "INVALID_PARAMS", LastError: "quarter Q5 does not exist"},
			"failed for good (INVALID_PARAMS): quarter Q5 does not exist"},
		{Summary{State: task.StateActive}, "processing"},
		{Summary{State: task.StatePending}, "waiting in the queue"},
		{Summary{State: task.StatePending, WaitingOn: []string{"t-a"}}, "waiting for task t-a to complete"},
		{Summary{State: task.StatePending, WaitingOn: []string{"t-a", "t-b", "t-c"}}, "waiting for 3 other tasks to complete"},
		{Summary{State: task.StateTimeout}, "taking longer than expected; still running"},
		{Summary{State: task.StateCancelled}, "cancelled"},
		{Summary{State: "SOMETHING_NEW"}, "SOMETHING_NEW"},
	} {
		s := c.s
		s.ID, s.Type, s.CreatedAt, s.UpdatedAt = "t-1", "report.generate", created, updated
		for _, archived := range []bool{false, true} {
			it := ItemOf(s, archived)
			require.Equal(t, c.want, it.Summary, "%+v", s)
			require.Equal(t, c.want, summaryOf(s))
			require.Equal(t, Item{TaskID: "t-1", TaskType: "report.generate", Status: StatusOf(s.State), State: s.State,
				Summary: c.want, CreatedAt: created, UpdatedAt: updated, Archived: archived, WaitingOn: s.WaitingOn}, it)
		}
	}
}

// TestWaitingViewNamesWhatItWaitsFor: a task waiting for others (not in
// the store yet) is answered as pending from Redis with what it waits
// for, one task by its id, several by their number, and no queue
// position.
func TestWaitingViewNamesWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	tk := &task.Task{ID: "t-then", Type: "report.send", State: task.StatePending, CreatedAt: t0, UpdatedAt: t0.Add(time.Second)}

	v := WaitingView(tk, []string{"t-first"})
	require.Equal(t, "t-then", v.TaskID)
	require.Equal(t, "report.send", v.TaskType)
	require.Equal(t, "pending", v.Status)
	require.Equal(t, task.StatePending, v.State)
	require.Equal(t, []string{"t-first"}, v.WaitingOn)
	require.Equal(t, "The task waits for task t-first to complete; it is queued then.", v.Message)
	require.Equal(t, "redis", v.Source)
	require.Equal(t, tk.CreatedAt, v.CreatedAt)
	require.Equal(t, tk.UpdatedAt, v.UpdatedAt)
	require.Nil(t, v.QueuePos)
	require.Nil(t, v.Result)
	require.Nil(t, v.Error)

	deps := []string{"t-a", "t-b", "t-c", "t-d"}
	v = WaitingView(tk, deps)
	require.Equal(t, deps, v.WaitingOn)
	require.Equal(t, "The task waits for "+strconv.Itoa(len(deps))+" other tasks to complete; it is queued then.", v.Message)
	for _, id := range deps {
		require.NotContains(t, v.Message, id, "several are counted, not listed")
	}
}

// FuzzParseFilter: ParseFilter never panics on outside input, accepts
// exactly the documented values (as themselves, "" as all) and refuses
// anything else with an error quoting it; an accepted filter selects the
// states whose status it names.
func FuzzParseFilter(f *testing.F) {
	for _, s := range acceptedFilters {
		f.Add(s)
	}
	for _, s := range []string{"ALL", " all", "dlq", "cancelled", "pending\x00", "\xff", "processing,failed", strings.Repeat("a", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseFilter(s)
		if !slices.Contains(acceptedFilters, s) {
			if err == nil {
				t.Fatalf("ParseFilter(%q) accepted %q", s, got)
			}
			if got != "" {
				t.Fatalf("ParseFilter(%q) refused but returned %q", s, got)
			}
			if !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("ParseFilter(%q): error %q does not quote the value", s, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("ParseFilter(%q): %v", s, err)
		}
		if s == "" {
			if got != FilterAll {
				t.Fatalf(`ParseFilter("") = %q, want all`, got)
			}
		} else if string(got) != s {
			t.Fatalf("ParseFilter(%q) = %q", s, got)
		}
		states := got.States()
		if got == FilterAll {
			if states != nil {
				t.Fatalf("all selects %v, want nil (every state)", states)
			}
			return
		}
		if len(states) == 0 {
			t.Fatalf("filter %q selects no state", got)
		}
		for _, st := range task.States {
			if (StatusOf(st) == string(got)) != slices.Contains(states, st) {
				t.Fatalf("filter %q: states %v disagree with StatusOf(%s) = %q", got, states, st, StatusOf(st))
			}
		}
	})
}
