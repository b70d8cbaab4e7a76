package keyspace

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, bad := range []string{"", "a{b", "a}b", "a b", "a\tb", strings.Repeat("x", 65)} {
		if _, err := Parse(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	ns, err := Parse("team-a.prod_1:eu")
	if err != nil {
		t.Fatal(err)
	}
	if got := ns.Key("task", "42"); got != "{team-a.prod_1:eu}:task:42" {
		t.Errorf("Key = %q", got)
	}
	if got := ns.Pattern(); got != "{team-a.prod_1:eu}:*" {
		t.Errorf("Pattern = %q", got)
	}
}

func TestDefault(t *testing.T) {
	if Default.Prefix() != "{taskflow}:" || Default.IsZero() || !(Namespace{}).IsZero() {
		t.Fatalf("Default = %+v", Default)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"taskflow", "", "a{b}", "x:y", "ns-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ns, err := Parse(s)
		if err != nil {
			return
		}
		// a valid namespace's keys carry exactly one hash tag: its own
		k := ns.Key("a")
		if strings.Count(k, "{") != 1 || strings.Count(k, "}") != 1 || !strings.HasPrefix(k, "{"+s+"}:") {
			t.Fatalf("Key of %q = %q", s, k)
		}
	})
}
