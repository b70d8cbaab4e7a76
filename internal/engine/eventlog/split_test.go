package eventlog

import "testing"

// FuzzSplitID: event ids come from clients (SSE Last-Event-ID).
func FuzzSplitID(f *testing.F) {
	for _, s := range []string{"1-0", "1-0.3", "1-0.", ".5", "1-0.-1", "1-0.99999999999999999999", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		entry, idx, err := splitID(s)
		if err == nil && idx < -1 {
			t.Fatalf("splitID(%q) = %q, %d", s, entry, idx)
		}
	})
}
