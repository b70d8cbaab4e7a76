package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/internal/engine/retry"
	"github.com/taskflow/taskflow/task"
)

func TestRegister(t *testing.T) {
	t.Parallel()
	mux := taskflow.NewMux()
	Register(mux)
	require.ElementsMatch(t, []string{TypeNoop, TypeSleep}, mux.Types())
	res, err := mux.ProcessTask(context.Background(), &task.Task{Type: TypeNoop})
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(res))
}

func TestSleep(t *testing.T) {
	t.Parallel()
	run := func(params string) (json.RawMessage, error) {
		return Sleep(context.Background(), &task.Task{Type: TypeSleep, Params: json.RawMessage(params)})
	}
	res, err := run(`{"duration_ms": 5}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"slept_ms":5}`, string(res))

	cases := map[string]task.Class{"transient": task.ClassTransient, "permanent": task.ClassPermanent, "timeout": task.ClassTransient}
	for kind, class := range cases {
		_, err := run(`{"fail":"` + kind + `"}`)
		require.Error(t, err)
		require.Equal(t, class, retry.Classify(err).Class, kind)
	}
	_, err = run(`{"fail":"cancel"}`)
	var ce *task.CancelError
	require.ErrorAs(t, err, &ce)
	require.Panics(t, func() { _, _ = run(`{"fail":"panic"}`) })

	for _, bad := range []string{`{"duration_ms":-1}`, `{"durationms":5}`, `{"fail":"maybe"}`, `[1]`, `{} {}`} {
		_, err := run(bad)
		var pe *task.PermanentError
		require.ErrorAs(t, err, &pe, bad)
	}
}

func TestSleepHonoursContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := Sleep(ctx, &task.Task{Params: json.RawMessage(`{"duration_ms": 60000}`)})
	require.True(t, errors.Is(err, context.DeadlineExceeded))
}

func FuzzParseSleepParams(f *testing.F) {
	for _, s := range []string{`{"duration_ms":5}`, `{"fail":"panic"}`, ``, `null`, `{"duration_ms":1e30}`, `{"a":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseSleepParams(b)
		if err == nil && (p.DurationMS < 0 || p.DurationMS > 86_400_000) {
			t.Fatalf("accepted out-of-range duration %d", p.DurationMS)
		}
	})
}
