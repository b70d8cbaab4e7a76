package resultview

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
)

// TestKeysCarryTheNamespaceHashTag: the cache and progress keys of a task
// are the documented task:{id}:result and agent:progress:{id} under the
// namespace's hash tag, so two deployments never share one, and a task's
// two keys differ.
func TestKeysCarryTheNamespaceHashTag(t *testing.T) {
	t.Parallel()
	a, b := keyspace.MustParse("tenant-a"), keyspace.MustParse("tenant-b")
	ka, kb := NewKeys(a), NewKeys(b)
	id := "01a2b3c4-task"
	require.Equal(t, a.Prefix()+"task:"+id+":result", ka.Cache(id))
	require.Equal(t, a.Prefix()+"agent:progress:"+id, ka.Progress(id))
	for _, k := range []string{ka.Cache(id), ka.Progress(id)} {
		require.True(t, strings.HasPrefix(k, "{tenant-a}:"), "%s carries the hash tag", k)
	}
	require.NotEqual(t, ka.Cache(id), kb.Cache(id))
	require.NotEqual(t, ka.Progress(id), kb.Progress(id))
	require.NotEqual(t, ka.Cache(id), ka.Progress(id))
	require.NotEqual(t, ka.Cache(id), ka.Cache(id+"x"))
}

// TestWriteProgressWritesTheReportAndItsLifetime: WriteProgress stores
// every field of the report in the progress hash (at_ms in milliseconds)
// and gives the key the lifetime asked for; a later write replaces the
// report and renews the lifetime.
func TestWriteProgressWritesTheReportAndItsLifetime(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	tk := b.active(t, store.EnqueueRequest{})
	k := NewKeys(b.st.Namespace())
	at := time.Date(2026, 3, 1, 12, 0, 5, 250_000_000, time.UTC)
	ttl := 90 * time.Minute
	p := Progress{Percent: 42.5, Message: "rendering frames", ETASeconds: 12.25, ReportedBy: "svc-video", At: at}
	require.NoError(t, WriteProgress(b.ctx, b.rdb, k, tk.ID, p, ttl))

	h, err := b.rdb.HGetAll(b.ctx, k.Progress(tk.ID)).Result()
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"percent":     strconv.FormatFloat(p.Percent, 'f', -1, 64),
		"message":     p.Message,
		"eta_seconds": strconv.FormatFloat(p.ETASeconds, 'f', -1, 64),
		"reported_by": p.ReportedBy,
		"at_ms":       strconv.FormatInt(at.UnixMilli(), 10),
	}, h)
	left, err := b.rdb.PTTL(b.ctx, k.Progress(tk.ID)).Result()
	require.NoError(t, err)
	require.Greater(t, left, time.Duration(0))
	require.LessOrEqual(t, left, ttl)

	// Shorten the lifetime by hand: the next write sets it again.
	require.NoError(t, b.rdb.Expire(b.ctx, k.Progress(tk.ID), time.Minute).Err())
	p2 := Progress{Percent: 100, Message: "done", ReportedBy: "svc-video", At: at.Add(time.Second)}
	require.NoError(t, WriteProgress(b.ctx, b.rdb, k, tk.ID, p2, ttl))
	left, err = b.rdb.PTTL(b.ctx, k.Progress(tk.ID)).Result()
	require.NoError(t, err)
	require.Greater(t, left, time.Minute, "renewed")
	require.LessOrEqual(t, left, ttl)
	v := b.read(t, tk.ID)
	require.NotNil(t, v.Progress)
	require.Equal(t, Progress{Percent: 100, Message: "done", ReportedBy: "svc-video", At: p2.At}, *v.Progress)
}
