package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/store"
)

// TestListingOrderIsGlobalAcrossPages: the admin's listing pages in the
// requested order across pages, for every sort_by and sort_order, with and
// without status, although no state index is ordered that way: tasks
// finish in the reverse order of their creation (COMPLETED), a delayed task
// is indexed by its due time (PENDING) and ACTIVE tasks by lease deadline.
// Pages of one task each are compared with the order computed here from
// the times the tasks were created and last changed.
func TestListingOrderIsGlobalAcrossPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	type times struct{ created, updated time.Time }
	at := map[string]*times{}
	state := map[string]string{}
	tick := func() time.Time { b.clock.Advance(time.Second); return b.clock.Now() }
	create := func(body map[string]any) string {
		now := tick()
		r := b.do("POST", "/api/v1/tasks", adminKey, body)
		require.Equal(t, http.StatusCreated, r.code, string(r.raw))
		id := r.body["task_id"].(string)
		at[id] = &times{now, now}
		state[id] = "PENDING"
		return id
	}
	fetch := func(lease time.Duration) (string, string) {
		now := tick()
		ts, err := b.st.Fetch(ctx, store.FetchRequest{N: 1, WorkerID: "w", TokenPrefix: "w" + fmt.Sprint(now.UnixNano()), Lease: lease})
		require.NoError(t, err)
		require.Len(t, ts, 1)
		at[ts[0].ID].updated, state[ts[0].ID] = now, "ACTIVE"
		return ts[0].ID, ts[0].Lease
	}
	complete := func(id, lease string) {
		at[id].updated, state[id] = tick(), "COMPLETED"
		require.NoError(t, b.st.Complete(ctx, id, lease, nil))
	}

	// COMPLETED: A created before B, B finished first.
	a := create(map[string]any{"task_type": "noop"})
	bb := create(map[string]any{"task_type": "noop"})
	idA, leaseA := fetch(time.Minute)
	idB, leaseB := fetch(time.Minute)
	require.Equal(t, []string{a, bb}, []string{idA, idB})
	complete(bb, leaseB)
	complete(a, leaseA)
	// PENDING: C delayed (indexed by its due time, an hour ahead), then F.
	create(map[string]any{"task_type": "noop", "delay": 3600})
	d := create(map[string]any{"task_type": "noop"})
	e := create(map[string]any{"task_type": "noop"})
	create(map[string]any{"task_type": "noop"})
	// ACTIVE: D taken first with a long lease, E after with a short one.
	idD, _ := fetch(10 * time.Minute)
	idE, _ := fetch(time.Minute)
	require.Equal(t, []string{d, e}, []string{idD, idE})

	pages := func(query string) []string {
		var got []string
		for page := 1; page <= len(at)+1; page++ {
			r := b.do("GET", fmt.Sprintf("/api/v1/tasks?summary=true&page_size=1&page=%d&%s", page, query), adminKey, nil)
			require.Equal(t, http.StatusOK, r.code, string(r.raw))
			require.NotEqual(t, true, r.body["partial"], query)
			ts := r.body["tasks"].([]any)
			if len(ts) == 0 {
				break
			}
			got = append(got, ts[0].(map[string]any)["task_id"].(string))
		}
		return got
	}
	for _, status := range []string{"", "COMPLETED", "PENDING", "ACTIVE"} {
		for _, by := range []string{"created_at", "updated_at"} {
			for _, order := range []string{"asc", "desc"} {
				var want []string
				for id := range at {
					if status == "" || state[id] == status {
						want = append(want, id)
					}
				}
				key := func(id string) time.Time {
					if by == "created_at" {
						return at[id].created
					}
					return at[id].updated
				}
				sort.Slice(want, func(i, j int) bool {
					if order == "asc" {
						return key(want[i]).Before(key(want[j]))
					}
					return key(want[j]).Before(key(want[i]))
				})
				query := fmt.Sprintf("status=%s&sort_by=%s&sort_order=%s", status, by, order)
				require.Equal(t, want, pages(query), query)
				require.Equal(t, want, pages(query+"&task_type=noop"), query+"&task_type=noop")
			}
		}
	}
}
