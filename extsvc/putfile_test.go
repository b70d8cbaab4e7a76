package extsvc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/external/resultview"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestPutFile: a small file goes into Redis, a large one into the shared
// artifact directory (its entry in Redis); the API's reader (resultview.File)
// gets the same bytes from either; without a directory a large file is
// refused with ErrFileTooLarge, and a bad name is refused.
func TestPutFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, ns := testredis.Client(t)
	dir := t.TempDir()
	svc, err := New(rdb, Config{Name: "files", Namespace: ns, ArtifactDir: dir})
	require.NoError(t, err)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	reader := resultview.New(st, resultview.Config{ArtifactDir: dir})
	task := &Task{ID: "0193-task", Type: "report.generate", svc: svc}

	small := []byte("quarter,revenue\nQ4,60\n")
	url, err := task.PutFile(ctx, "r.csv", "text/csv", small)
	require.NoError(t, err)
	require.Equal(t, "/api/v1/results/0193-task/files/r.csv", url)
	f, err := reader.File(ctx, task.ID, "r.csv")
	require.NoError(t, err)
	require.Equal(t, small, f.Data)
	require.Equal(t, "text/csv", f.ContentType)
	ttl, err := rdb.PTTL(ctx, svc.keys.Artifact(task.ID, "r.csv")).Result()
	require.NoError(t, err)
	require.InDelta(t, protocol.ArtifactTTL.Seconds(), ttl.Seconds(), 60)

	large := bytes.Repeat([]byte("0123456789abcdef"), protocol.MaxArtifactBytes/16+1)
	_, err = task.PutFile(ctx, "big.bin", "", large)
	require.NoError(t, err)
	h, err := rdb.HGetAll(ctx, svc.keys.Artifact(task.ID, "big.bin")).Result()
	require.NoError(t, err)
	require.Equal(t, protocol.ArtifactInDir, h["location"])
	require.NotContains(t, h, "data", "the bytes are in the directory, not in Redis")
	onDisk, err := os.ReadFile(protocol.ArtifactPath(dir, task.ID, "big.bin"))
	require.NoError(t, err)
	require.Equal(t, len(large), len(onDisk))
	f, err = reader.File(ctx, task.ID, "big.bin")
	require.NoError(t, err)
	require.Equal(t, "application/octet-stream", f.ContentType)
	require.True(t, bytes.Equal(large, f.Data))
	_, err = resultview.New(st, resultview.Config{}).File(ctx, task.ID, "big.bin")
	require.ErrorIs(t, err, resultview.ErrNoArtifactDir, "an API without the directory says so")

	// A redone attempt replaces the file whole, wherever it was.
	_, err = task.PutFile(ctx, "big.bin", "text/plain", []byte("now small"))
	require.NoError(t, err)
	f, err = reader.File(ctx, task.ID, "big.bin")
	require.NoError(t, err)
	require.Equal(t, "now small", string(f.Data))

	noDir, err := New(rdb, Config{Name: "files2", Namespace: ns})
	require.NoError(t, err)
	_, err = (&Task{ID: "t2", svc: noDir}).PutFile(ctx, "big.bin", "", large)
	require.True(t, errors.Is(err, ErrFileTooLarge), "%v", err)
	for _, bad := range []string{"", ".hidden", "a/b", "x y", string(make([]byte, 200))} {
		_, err = task.PutFile(ctx, bad, "", small)
		require.Error(t, err, "%q", bad)
	}
	_, err = reader.File(ctx, task.ID, "missing.csv")
	require.ErrorIs(t, err, resultview.ErrNoFile)
}
