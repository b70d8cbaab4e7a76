package version

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	in := Info{Module: "v1.2.0", Commit: "0123456789abcdef0123", Modified: true, Go: "go1.26.8"}
	if got, want := in.String(), "v1.2.0 commit 0123456789ab (modified) go1.26.8"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	if got := (Info{Module: "(devel)"}).String(); got != "(devel) commit unknown" {
		t.Fatalf("String = %q", got)
	}
}

// A test binary has build information: Read reports its Go version and a
// module version.
func TestRead(t *testing.T) {
	in := Read()
	if !strings.HasPrefix(in.Go, "go1.") || in.Module == "" {
		t.Fatalf("Read = %+v", in)
	}
}

func TestLinkedCommit(t *testing.T) {
	old := commit
	t.Cleanup(func() { commit = old })
	commit = "feedface"
	if in := Read(); in.Commit == "" {
		t.Fatalf("Read ignores the linked commit: %+v", in)
	}
}
