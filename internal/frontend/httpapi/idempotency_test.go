package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// doKey is do with an Idempotency-Key header (none when key is "").
func (b *testBundle) doKey(method, path, token, key string, body any) resp {
	b.t.Helper()
	j, err := json.Marshal(body)
	require.NoError(b.t, err)
	req, err := http.NewRequest(method, b.srv.URL+path, bytes.NewReader(j))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := b.srv.Client().Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(b.t, err)
	out := resp{code: res.StatusCode, raw: raw, hdr: res.Header}
	require.NoError(b.t, json.Unmarshal(raw, &out.body), "body: %s", raw)
	return out
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sess := b.session()
	body := map[string]any{"task_type": "noop", "params": map[string]any{"n": 1}}

	t.Run("ReplaysTheFirstAnswer", func(t *testing.T) {
		b := b.with(t)
		first := b.doKey("POST", "/api/v1/tasks", sess.Token, "k-replay", body)
		require.Equal(t, http.StatusCreated, first.code, string(first.raw))
		require.Empty(t, first.hdr.Get("Idempotent-Replayed"))
		again := b.doKey("POST", "/api/v1/tasks", sess.Token, "k-replay", body)
		require.Equal(t, http.StatusCreated, again.code, string(again.raw))
		require.Equal(t, "true", again.hdr.Get("Idempotent-Replayed"))
		require.JSONEq(t, string(first.raw), string(again.raw))
	})

	t.Run("AnotherBodyIs422", func(t *testing.T) {
		b := b.with(t)
		require.Equal(t, http.StatusCreated, b.doKey("POST", "/api/v1/tasks", sess.Token, "k-body", body).code)
		r := b.doKey("POST", "/api/v1/tasks", sess.Token, "k-body", map[string]any{"task_type": "noop", "priority": "high"})
		require.Equal(t, http.StatusUnprocessableEntity, r.code, string(r.raw))
		require.Equal(t, "idempotency_key_reused", r.errCode())
		require.Equal(t, "Idempotency-Key", r.errField())
		other := b.doKey("POST", "/api/v1/tasks/summarize", sess.Token, "k-body", map[string]any{"content": "x"})
		require.Equal(t, http.StatusUnprocessableEntity, other.code, "another endpoint is another request: %s", other.raw)
	})

	t.Run("KeysArePerCaller", func(t *testing.T) {
		b := b.with(t)
		other := b.session()
		mine := b.doKey("POST", "/api/v1/tasks", sess.Token, "k-caller", body)
		theirs := b.doKey("POST", "/api/v1/tasks", other.Token, "k-caller", body)
		require.Equal(t, http.StatusCreated, theirs.code, string(theirs.raw))
		require.Empty(t, theirs.hdr.Get("Idempotent-Replayed"))
		require.NotEqual(t, mine.body["task_id"], theirs.body["task_id"])
	})

	t.Run("RefusedRequestRecordsNothing", func(t *testing.T) {
		b := b.with(t)
		bad := map[string]any{"task_type": "noop", "priority": "urgent"}
		r := b.doKey("POST", "/api/v1/tasks", sess.Token, "k-refused", bad)
		require.Equal(t, http.StatusUnprocessableEntity, r.code)
		require.Equal(t, "priority", r.errField())
		ok := b.doKey("POST", "/api/v1/tasks", sess.Token, "k-refused", body)
		require.Equal(t, http.StatusCreated, ok.code, "a refused request leaves the key free: %s", ok.raw)
	})

	t.Run("BadKeys", func(t *testing.T) {
		b := b.with(t)
		for name, key := range map[string]string{"TooLong": strings.Repeat("k", 256), "NotASCII": "clé"} {
			t.Run(name, func(t *testing.T) {
				r := b.with(t).doKey("POST", "/api/v1/tasks", sess.Token, key, body)
				require.Equal(t, http.StatusBadRequest, r.code, string(r.raw))
				require.Equal(t, "invalid_idempotency_key", r.errCode())
				require.Equal(t, "Idempotency-Key", r.errField())
			})
		}
	})

	t.Run("ConcurrentResendsMakeOneTask", func(t *testing.T) {
		b := b.with(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		ids := map[any]bool{}
		codes := map[int]int{}
		for range 16 {
			wg.Go(func() {
				r := b.doKey("POST", "/api/v1/tasks", sess.Token, "k-race", body)
				mu.Lock()
				defer mu.Unlock()
				codes[r.code]++
				if r.code == http.StatusCreated {
					ids[r.body["task_id"]] = true
				} else if r.errCode() != "idempotency_key_in_use" {
					t.Errorf("unexpected answer %d %s", r.code, r.raw)
				}
			})
		}
		wg.Wait()
		require.Len(t, ids, 1, "answers %v", codes)
	})
}

func TestUniqueKeyHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sess := b.session()
	in := map[string]any{"task_type": "noop", "unique_key": "report-7"}
	first := b.do("POST", "/api/v1/tasks", sess.Token, in)
	require.Equal(t, http.StatusCreated, first.code, string(first.raw))
	dup := b.do("POST", "/api/v1/tasks", sess.Token, in)
	require.Equal(t, http.StatusOK, dup.code, string(dup.raw))
	require.Equal(t, map[string]any{"task_id": first.body["task_id"], "state": "PENDING", "duplicate": true}, dup.body)

	other := b.session()
	theirs := b.do("POST", "/api/v1/tasks", other.Token, in)
	require.Equal(t, http.StatusCreated, theirs.code, "another session's key of the same name is its own: %s", theirs.raw)

	for name, c := range map[string]struct {
		body  map[string]any
		field string
	}{
		"TooLong":        {map[string]any{"task_type": "noop", "unique_key": strings.Repeat("u", 201)}, "unique_key"},
		"ForWithoutKey":  {map[string]any{"task_type": "noop", "unique_for": 60}, "unique_for"},
		"NegativeFor":    {map[string]any{"task_type": "noop", "unique_key": "a", "unique_for": -1}, "unique_for"},
		"WithDependsOn":  {map[string]any{"task_type": "noop", "unique_key": "a", "depends_on": []string{first.body["task_id"].(string)}}, "unique_key"},
		"ForIsNotNumber": {map[string]any{"task_type": "noop", "unique_key": "a", "unique_for": "1h"}, "unique_for"},
	} {
		t.Run(name, func(t *testing.T) {
			r := b.with(t).do("POST", "/api/v1/tasks", sess.Token, c.body)
			require.GreaterOrEqual(t, r.code, 400, string(r.raw))
			require.Less(t, r.code, 500, string(r.raw))
			require.Equal(t, c.field, r.errField(), string(r.raw))
		})
	}
}

func TestBatchSubmit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sess := b.session()

	t.Run("PerItemResults", func(t *testing.T) {
		b := b.with(t)
		held := b.do("POST", "/api/v1/tasks", sess.Token, map[string]any{"task_type": "noop", "unique_key": "held"})
		require.Equal(t, http.StatusCreated, held.code)
		r := b.do("POST", "/api/v1/tasks/batch", sess.Token, map[string]any{"tasks": []map[string]any{
			{"task_type": "noop"},
			{"task_type": "noop", "unique_key": "held"},
			{"task_type": "noop", "priority": "urgent"},
			{"task_type": "no.such.type"},
			{"task_type": "noop", "unique_key": "fresh"},
			{"task_type": "noop", "unique_key": "fresh"},
		}})
		require.Equal(t, http.StatusOK, r.code, string(r.raw))
		res := r.body["results"].([]any)
		require.Len(t, res, 6)
		item := func(i int) map[string]any { return res[i].(map[string]any) }
		for i := range res {
			require.EqualValues(t, i, item(i)["index"])
		}
		require.Equal(t, "created", item(0)["status"])
		require.Equal(t, "PENDING", item(0)["state"])
		require.Equal(t, "duplicate", item(1)["status"])
		require.Equal(t, held.body["task_id"], item(1)["task_id"])
		require.Equal(t, "invalid", item(2)["status"])
		require.Equal(t, "tasks[2].priority", item(2)["error"].(map[string]any)["field"])
		require.Equal(t, "invalid", item(3)["status"])
		require.Equal(t, "tasks[3].task_type", item(3)["error"].(map[string]any)["field"])
		require.Equal(t, "created", item(4)["status"])
		require.Equal(t, "duplicate", item(5)["status"])
		require.Equal(t, item(4)["task_id"], item(5)["task_id"])
		got := b.do("GET", "/api/v1/tasks/"+item(0)["task_id"].(string), sess.Token, nil)
		require.Equal(t, http.StatusOK, got.code)
	})

	t.Run("Limits", func(t *testing.T) {
		b := b.with(t)
		for name, n := range map[string]int{"Empty": 0, "TooMany": 1001} {
			t.Run(name, func(t *testing.T) {
				tasks := make([]map[string]any, n)
				for i := range tasks {
					tasks[i] = map[string]any{"task_type": "noop"}
				}
				r := b.with(t).do("POST", "/api/v1/tasks/batch", sess.Token, map[string]any{"tasks": tasks})
				require.Equal(t, http.StatusUnprocessableEntity, r.code, string(r.raw))
				require.Equal(t, "tasks", r.errField())
			})
		}
		r := b.do("POST", "/api/v1/tasks/batch", sess.Token, `{"tasks": {"task_type": "noop"}}`)
		require.Equal(t, http.StatusBadRequest, r.code, string(r.raw))
		require.Equal(t, "tasks", r.errField())
	})

	t.Run("Thousand", func(t *testing.T) {
		b := b.with(t)
		tasks := make([]map[string]any, 1000)
		for i := range tasks {
			tasks[i] = map[string]any{"task_type": "noop", "params": map[string]any{"i": i}}
		}
		r := b.do("POST", "/api/v1/tasks/batch", sess.Token, map[string]any{"tasks": tasks})
		require.Equal(t, http.StatusOK, r.code, string(r.raw))
		ids := map[any]bool{}
		for _, it := range r.body["results"].([]any) {
			require.Equal(t, "created", it.(map[string]any)["status"])
			ids[it.(map[string]any)["task_id"]] = true
		}
		require.Len(t, ids, 1000)
	})

	t.Run("IdempotentReplay", func(t *testing.T) {
		b := b.with(t)
		body := map[string]any{"tasks": []map[string]any{
			{"task_type": "noop"}, {"task_type": "noop", "priority": "urgent"}, {"task_type": "noop", "unique_key": "b-held"}, {"task_type": "noop", "unique_key": "b-held"},
		}}
		first := b.doKey("POST", "/api/v1/tasks/batch", sess.Token, "batch-1", body)
		require.Equal(t, http.StatusOK, first.code, string(first.raw))
		again := b.doKey("POST", "/api/v1/tasks/batch", sess.Token, "batch-1", body)
		require.Equal(t, http.StatusOK, again.code, string(again.raw))
		require.Equal(t, "true", again.hdr.Get("Idempotent-Replayed"))
		require.JSONEq(t, string(first.raw), string(again.raw))
		body["tasks"] = body["tasks"].([]map[string]any)[:1]
		r := b.doKey("POST", "/api/v1/tasks/batch", sess.Token, "batch-1", body)
		require.Equal(t, http.StatusUnprocessableEntity, r.code)
		require.Equal(t, "idempotency_key_reused", r.errCode())
	})

	t.Run("IsolatedFromOtherSessions", func(t *testing.T) {
		b := b.with(t)
		other := b.session()
		r := b.do("POST", "/api/v1/tasks/batch", other.Token, map[string]any{"tasks": []map[string]any{{"task_type": "noop", "unique_key": "held"}}})
		require.Equal(t, http.StatusOK, r.code)
		require.Equal(t, "created", r.body["results"].([]any)[0].(map[string]any)["status"], fmt.Sprint(r.body))
	})
}
