package stream

import (
	"fmt"
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
