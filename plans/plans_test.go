package plans

import (
	"os"
	"testing"
)

// The embedded set is exactly the folder's *.plan.json, so a binary built
// anywhere answers as `--plan-dir plans` does from the repository root.
func TestEmbeddedMatchesFolder(t *testing.T) {
	emb, err := Names(FS())
	if err != nil {
		t.Fatal(err)
	}
	disk, err := Names(os.DirFS("."))
	if err != nil {
		t.Fatal(err)
	}
	if len(emb) == 0 || len(emb) != len(disk) {
		t.Fatalf("embedded %v, folder %v", emb, disk)
	}
	for i := range emb {
		if emb[i] != disk[i] {
			t.Fatalf("embedded %v, folder %v", emb, disk)
		}
	}
}
