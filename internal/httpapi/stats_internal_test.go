package httpapi

import "testing"

func TestEntryAfter(t *testing.T) {
	for _, c := range []struct {
		ev, entry string
		want      bool
	}{
		{"100-0.0", "99-5", true},
		{"100-0.3", "100-0", false},
		{"100-1.0", "100-0", true},
		{"99-9.0", "100-0", false},
		{"1700000000001-0.2", "1700000000000-7", true},
	} {
		if got := entryAfter(c.ev, c.entry); got != c.want {
			t.Errorf("entryAfter(%q, %q) = %v", c.ev, c.entry, got)
		}
	}
}
