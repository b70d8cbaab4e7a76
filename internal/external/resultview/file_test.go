package resultview

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/external/protocol"
)

// putFile writes task id's artifact hash as extsvc's PutFile does;
// fields are its fields (content_type, sha256, data, location…).
func (b *bundle) putFile(t *testing.T, id, name string, fields ...any) {
	t.Helper()
	key := protocol.NewKeys(b.st.Namespace()).Artifact(id, name)
	require.NoError(t, b.rdb.HSet(b.ctx, key, fields...).Err())
	require.NoError(t, b.rdb.Expire(b.ctx, key, protocol.ArtifactTTL).Err())
}

func sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// TestFileFromRedis: a result file kept in Redis is read back with its
// name, content type, checksum and bytes.
func TestFileFromRedis(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	id := "task-1"
	csv := []byte("quarter,revenue\nQ4,60\n")
	b.putFile(t, id, "q4.csv", "content_type", "text/csv; charset=utf-8", "size", len(csv), "sha256", sum(csv), "data", csv)

	f, err := b.r.File(b.ctx, id, "q4.csv")
	require.NoError(t, err)
	require.Equal(t, File{Name: "q4.csv", ContentType: "text/csv; charset=utf-8", SHA256: sum(csv), Data: csv}, f)

	// binary bytes come back as they were
	bin := []byte{0, 1, 2, 0xff, 0xfe, '\n', 0}
	b.putFile(t, id, "blob.bin", "content_type", "application/x-thing", "size", len(bin), "sha256", sum(bin), "data", bin)
	f, err = b.r.File(b.ctx, id, "blob.bin")
	require.NoError(t, err)
	require.Equal(t, bin, f.Data)
}

// TestFileWithoutAContentTypeIsOctetStream: a file stored without a
// content type is served as application/octet-stream.
func TestFileWithoutAContentTypeIsOctetStream(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.putFile(t, "task-1", "raw", "data", "xyz")
	f, err := b.r.File(b.ctx, "task-1", "raw")
	require.NoError(t, err)
	require.Equal(t, "application/octet-stream", f.ContentType)
	require.Equal(t, []byte("xyz"), f.Data)
}

// TestFileMissingIsErrNoFile: a name never stored, another task's file and
// a file stored in another namespace are ErrNoFile.
func TestFileMissingIsErrNoFile(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	other := setup(t, options{})
	b.putFile(t, "task-1", "q4.csv", "content_type", "text/csv", "data", "a,b\n")
	other.putFile(t, "task-2", "q4.csv", "content_type", "text/csv", "data", "a,b\n")

	for _, c := range []struct{ id, name string }{
		{"task-1", "q3.csv"},
		{"task-2", "q4.csv"}, // another namespace's
		{"task-3", "q4.csv"},
	} {
		_, err := b.r.File(b.ctx, c.id, c.name)
		require.ErrorIs(t, err, ErrNoFile, "%s/%s", c.id, c.name)
	}
}

// TestFileRefusesNamesThatAreNotOnePathSegment: a name that could leave
// the task's files (a traversal, an absolute path, a separator), a hidden
// name, an empty or too long one is ErrNoFile, even when something is
// stored under it, and even for a file in the artifact directory.
func TestFileRefusesNamesThatAreNotOnePathSegment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := setup(t, options{cfg: Config{ArtifactDir: dir}})
	id := "task-1"
	// a file beside the task's directory, and one outside the artifact
	// directory, that a traversal would reach
	require.NoError(t, os.MkdirAll(filepath.Join(dir, id), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("another's"), 0o644))
	outside := filepath.Join(t.TempDir(), "passwd")
	require.NoError(t, os.WriteFile(outside, []byte("root:x:0:0"), 0o644))

	for _, name := range []string{
		"../secret.txt", "..", ".", "../../" + filepath.Base(outside), outside, "/etc/passwd",
		"sub/x.csv", `sub\x.csv`, ".hidden", "", strings.Repeat("a", 129), "x.csv\x00", "a b.csv", "é.csv",
	} {
		// stored under that name both in Redis and as a directory file
		b.putFile(t, id, name, "content_type", "text/plain", "data", "stored under "+name)
		_, err := b.r.File(b.ctx, id, name)
		require.ErrorIs(t, err, ErrNoFile, "name %q", name)
		b.putFile(t, id, name, "content_type", "text/plain", "location", protocol.ArtifactInDir)
		_, err = b.r.File(b.ctx, id, name)
		require.ErrorIs(t, err, ErrNoFile, "name %q in the directory", name)
	}

	// the longest and the odd-but-valid names are read
	for _, name := range []string{strings.Repeat("a", 128), "Q4_report-v2.tar.gz", "0"} {
		b.putFile(t, id, name, "data", name)
		f, err := b.r.File(b.ctx, id, name)
		require.NoError(t, err, "name %q", name)
		require.Equal(t, []byte(name), f.Data)
	}
}

// TestFileFromTheArtifactDir: a file whose entry says it is in the
// artifact directory is read from Config.ArtifactDir (where extsvc puts
// files too large for Redis), not from its Redis entry.
func TestFileFromTheArtifactDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := setup(t, options{cfg: Config{ArtifactDir: dir}})
	id := "task-1"
	data := []byte(strings.Repeat("frame;", 1000))
	require.NoError(t, protocol.WriteArtifactFile(dir, id, "video.bin", data))
	b.putFile(t, id, "video.bin", "content_type", "video/mp4", "size", len(data), "sha256", sum(data),
		"location", protocol.ArtifactInDir)

	f, err := b.r.File(b.ctx, id, "video.bin")
	require.NoError(t, err)
	require.Equal(t, File{Name: "video.bin", ContentType: "video/mp4", SHA256: sum(data), Data: data}, f)

	// The file on disk is what is served, whatever the entry holds.
	replaced := []byte("replaced on disk")
	require.NoError(t, protocol.WriteArtifactFile(dir, id, "video.bin", replaced))
	f, err = b.r.File(b.ctx, id, "video.bin")
	require.NoError(t, err)
	require.Equal(t, replaced, f.Data)
}

// TestFileInTheArtifactDirWithoutOneIsErrNoArtifactDir: a process without
// an artifact directory cannot serve a file kept there and says so.
func TestFileInTheArtifactDirWithoutOneIsErrNoArtifactDir(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.putFile(t, "task-1", "video.bin", "content_type", "video/mp4", "location", protocol.ArtifactInDir)
	_, err := b.r.File(b.ctx, "task-1", "video.bin")
	require.ErrorIs(t, err, ErrNoArtifactDir)
	require.Contains(t, err.Error(), "TASKFLOW_ARTIFACT_DIR")
}

// TestFileGoneFromTheArtifactDirIsErrNoFile: an entry whose file is no
// longer in the artifact directory is ErrNoFile; a path there that is not
// a readable file is another error.
func TestFileGoneFromTheArtifactDirIsErrNoFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := setup(t, options{cfg: Config{ArtifactDir: dir}})
	b.putFile(t, "task-1", "gone.bin", "location", protocol.ArtifactInDir)
	_, err := b.r.File(b.ctx, "task-1", "gone.bin")
	require.ErrorIs(t, err, ErrNoFile)

	require.NoError(t, os.MkdirAll(protocol.ArtifactPath(dir, "task-1", "adir"), 0o755))
	b.putFile(t, "task-1", "adir", "location", protocol.ArtifactInDir)
	_, err = b.r.File(b.ctx, "task-1", "adir")
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrNoFile)
}

// TestFileInTheArtifactDirNeedsATaskIDOfOneSegment: an entry that says
// its file is in the artifact directory is read from there only when the
// task id is one path segment (as protocol.WriteArtifactFile writes it):
// an id such as "../other" never reaches a file outside its directory.
func TestFileInTheArtifactDirNeedsATaskIDOfOneSegment(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "artifacts")
	b := setup(t, options{cfg: Config{ArtifactDir: dir}})
	// a file outside the artifact directory, where "../outside" leads
	require.NoError(t, protocol.WriteArtifactFile(root, "outside", "secret.txt", []byte("not yours")))
	for _, id := range []string{"../outside", "a/../../outside", ".."} {
		b.putFile(t, id, "secret.txt", "location", protocol.ArtifactInDir)
		_, err := b.r.File(b.ctx, id, "secret.txt")
		require.ErrorIs(t, err, ErrNoFile, "task id %q", id)
	}
}
