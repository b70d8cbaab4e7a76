package store

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/task"
)

// FuzzPrepare: enqueue requests come from API clients. Whatever they hold,
// prepare either refuses them with a ValidationError naming a field, or
// returns a request the scripts can store (an id without separators, a
// known priority, valid JSON params).
func FuzzPrepare(f *testing.F) {
	f.Add("", "noop", "", `{"a":1}`, "", int64(0))
	f.Add("job-1", "sleep", "high", `{"duration_ms":5}`, "s1", int64(1000))
	f.Add("a b", "x", "urgent", `{`, "s\x1f", int64(-1))
	f.Add("{x}", "", "LOW", `null`, "", int64(5))
	s, err := New(nil, Config{})
	if err == nil || s != nil {
		f.Fatal("New(nil) must fail")
	}
	st := &Store{cfg: Config{Namespace: "fuzz"}.WithDefaults(), parts: partitionKeys(keyspace.MustParse("fuzz"), 1)}
	f.Fuzz(func(t *testing.T, id, typ, prio, params, session string, timeoutMS int64) {
		r := EnqueueRequest{ID: id, Type: typ, Priority: task.Priority(prio), SessionID: session,
			Timeout: time.Duration(timeoutMS) * time.Millisecond}
		if params != "" {
			r.Params = json.RawMessage(params)
		}
		got, err := st.prepare(r)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Field == "" {
				t.Fatalf("error without a field: %v", err)
			}
			return
		}
		if got.ID == "" || strings.ContainsAny(got.ID, "{},; \n") {
			t.Fatalf("accepted id %q", got.ID)
		}
		if got.Priority != "high" && got.Priority != "normal" && got.Priority != "low" {
			t.Fatalf("accepted priority %q", got.Priority)
		}
		if len(got.Params) > 0 && !json.Valid(got.Params) {
			t.Fatalf("accepted params %q", got.Params)
		}
		if strings.ContainsAny(got.Type+got.SessionID, "\x1e\x1f") {
			t.Fatalf("accepted separators in %q / %q", got.Type, got.SessionID)
		}
	})
}
