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

func TestSlotMatchesRedis(t *testing.T) {
	// CLUSTER KEYSLOT answers, as Redis documents them
	for key, slot := range map[string]int{"foo": 12182, "bar": 5061, "123456789": 12739, "": 0} {
		if got := Slot(key); got != slot {
			t.Errorf("Slot(%q) = %d, want %d", key, got, slot)
		}
	}
}

func TestPartitionPrefixesSpreadOverSlotRanges(t *testing.T) {
	ns := MustParse("taskflow")
	if got := ns.PartitionPrefixes(1); len(got) != 1 || got[0] != "{taskflow}:" {
		t.Fatalf("one partition keeps the namespace's prefix, got %v", got)
	}
	for _, count := range []int{2, 3, 6, 16, 256} {
		seen := map[string]bool{}
		for k, p := range ns.PartitionPrefixes(count) {
			if seen[p] {
				t.Fatalf("count %d: prefix %s twice", count, p)
			}
			seen[p] = true
			tag := strings.TrimSuffix(strings.TrimPrefix(p, "{"), "}:")
			if r := Slot(tag) * count / SlotCount; r != k {
				t.Errorf("count %d: partition %d (%s) is in slot range %d", count, k, p, r)
			}
			if _, err := Parse(tag); err == nil {
				t.Errorf("%s: a partition's tag must not be a valid namespace name", tag)
			}
		}
	}
}
