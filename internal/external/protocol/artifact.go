package protocol

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// Artifact limits: a result file kept in Redis is at most MaxArtifactBytes
// and lives ArtifactTTL (as long as the streams keep their events).
const (
	MaxArtifactBytes = 8 << 20
	ArtifactTTL      = DefaultRetention
)

var artifactName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// CheckArtifactName refuses a file name that could not be one path
// segment of FileURL: 1..128 of letters, digits, '.', '_' and '-', not
// starting with a dot.
func CheckArtifactName(name string) error {
	if !artifactName.MatchString(name) {
		return fmt.Errorf("artifact name %q: want 1 to 128 of A-Z a-z 0-9 . _ -, not starting with a dot", name)
	}
	return nil
}

// FileURL is where the API serves a task's artifact (relative to the API's
// base URL), the file_url a service puts in its result.
func FileURL(taskID, name string) string {
	return "/api/v1/results/" + taskID + "/files/" + name
}

// ArtifactInDir is the location field of an artifact whose bytes are in
// the shared artifact directory rather than in its Redis hash.
const ArtifactInDir = "dir"

// ArtifactPath is where an artifact lives in the artifact directory dir.
func ArtifactPath(dir, taskID, name string) string {
	return filepath.Join(dir, taskID, name)
}

// WriteArtifactFile writes data as ArtifactPath(dir, taskID, name),
// atomically (a reader sees the old file or the new one, whole).
func WriteArtifactFile(dir, taskID, name string, data []byte) error {
	if err := CheckArtifactName(taskID); err != nil {
		return err
	}
	if err := CheckArtifactName(name); err != nil {
		return err
	}
	sub := filepath.Join(dir, taskID)
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return fmt.Errorf("artifact directory: %w", err)
	}
	tmp, err := os.CreateTemp(sub, ".tmp-*")
	if err != nil {
		return fmt.Errorf("artifact directory: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), ArtifactPath(dir, taskID, name))
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("artifact directory: %w", werr)
	}
	return nil
}
