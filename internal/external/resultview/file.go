package resultview

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/taskflow/taskflow/internal/external/protocol"
)

// File is a task's result file from the artifact store.
type File struct {
	Name        string
	ContentType string
	SHA256      string
	Data        []byte
}

// ErrNoFile: the task has no stored file of that name (never stored, or
// expired after protocol.ArtifactTTL).
var ErrNoFile = errors.New("result: no such file")

// File reads the result file name of task id (a service stored it with
// extsvc.Task.PutFile). Who may read it is the service layer's rule.
func (r *Results) File(ctx context.Context, id, name string) (File, error) {
	if protocol.CheckArtifactName(name) != nil {
		return File{}, ErrNoFile
	}
	h, err := r.rdb.HGetAll(ctx, protocol.NewKeys(r.st.Namespace()).Artifact(id, name)).Result()
	if err != nil {
		return File{}, err
	}
	if len(h) == 0 {
		return File{}, ErrNoFile
	}
	ct := h["content_type"]
	if ct == "" {
		ct = "application/octet-stream"
	}
	f := File{Name: name, ContentType: ct, SHA256: h["sha256"], Data: []byte(h["data"])}
	if h["location"] == protocol.ArtifactInDir {
		if r.cfg.ArtifactDir == "" {
			return File{}, ErrNoArtifactDir
		}
		// the task id is a directory under ArtifactDir: one path segment,
		// as protocol.WriteArtifactFile writes it, whatever the entry says
		if protocol.CheckArtifactName(id) != nil {
			return File{}, ErrNoFile
		}
		b, err := os.ReadFile(protocol.ArtifactPath(r.cfg.ArtifactDir, id, name))
		if errors.Is(err, fs.ErrNotExist) {
			return File{}, ErrNoFile
		}
		if err != nil {
			return File{}, err
		}
		f.Data = b
	}
	return f, nil
}

// ErrNoArtifactDir: the file is in the shared artifact directory and this
// process has none (TASKFLOW_ARTIFACT_DIR unset here).
var ErrNoArtifactDir = errors.New("result: the file is in the artifact directory, which this API process does not have (set TASKFLOW_ARTIFACT_DIR)")
