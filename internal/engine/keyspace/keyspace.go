// Package keyspace holds the one value every Redis key of a deployment is
// derived from: its namespace. Each package that owns keys builds them in its
// own keys.go from a Namespace, and nothing else spells out the hash tag or
// defaults the namespace, so one deployment's keys cannot drift apart.
package keyspace

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Namespace names one deployment's keys. Every key starts with the hash tag
// "{namespace}:", so a Redis Cluster keeps all the keys a script touches in
// one slot. The zero value is not valid: build one with Parse or use Default.
type Namespace struct {
	name string
}

// DefaultName is the namespace of a deployment that names none
// (TASKFLOW_NAMESPACE unset).
const DefaultName = "taskflow"

// Default is the namespace of a deployment that names none.
var Default = Namespace{name: DefaultName}

// ErrInvalid is wrapped by every error Parse returns.
var ErrInvalid = errors.New("invalid namespace")

// partitionSuffix is how a partition's hash tag ends (PartitionPrefix); a
// namespace name may not end that way, or namespace "a" partition 1 and
// namespace "a:p1" would share keys.
var partitionSuffix = regexp.MustCompile(`:p[0-9]+$`)

// Parse checks name and returns its Namespace. A name is 1 to 64 characters
// without braces or white space (a brace would end the hash tag early, so
// two namespaces could share a slot's keys), not ending in ":p" and digits
// (the partitions' hash tags end so).
func Parse(name string) (Namespace, error) {
	switch {
	case partitionSuffix.MatchString(name):
		return Namespace{}, fmt.Errorf("%w: %q ends like a partition's hash tag (\":p\" and digits)", ErrInvalid, name)
	case name == "":
		return Namespace{}, fmt.Errorf("%w: it is empty", ErrInvalid)
	case len(name) > 64:
		return Namespace{}, fmt.Errorf("%w: %d characters, at most 64", ErrInvalid, len(name))
	case strings.ContainsAny(name, "{} \t\r\n"):
		return Namespace{}, fmt.Errorf("%w: %q holds a brace or white space", ErrInvalid, name)
	}
	return Namespace{name: name}, nil
}

// MustParse is Parse for names known to be valid (tests, constants); it
// panics on an invalid one.
func MustParse(name string) Namespace {
	ns, err := Parse(name)
	if err != nil {
		panic(err)
	}
	return ns
}

// Name is the namespace as the user wrote it ("taskflow").
func (n Namespace) Name() string { return n.name }

// String is Name, for logs and messages.
func (n Namespace) String() string { return n.name }

// IsZero reports whether n was never set (a bug in the caller: every
// constructor that takes a Namespace refuses the zero value).
func (n Namespace) IsZero() bool { return n.name == "" }

// Prefix is what every key of the namespace starts with: "{taskflow}:".
// Scripts that derive per-id keys inside Redis get it (or a longer prefix)
// in KEYS.
func (n Namespace) Prefix() string { return "{" + n.name + "}:" }

// Key joins parts with ':' under the namespace's prefix:
// Key("task", id) is "{taskflow}:task:<id>".
func (n Namespace) Key(parts ...string) string {
	return n.Prefix() + strings.Join(parts, ":")
}

// PartitionPrefixes are the key prefixes of the count partitions of a
// deployment split into several: partition k's keys start with
// "{taskflow:pJ}:", a hash tag of its own so a Redis Cluster can place
// each partition on its own shard. A slot is a hash of the tag (CRC16 mod
// 16384), so J is not simply k: it is the first number whose tag's slot
// lies in the k-th of count equal slot ranges, the ranges
// `redis-cli --cluster create` gives its masters. So with count a multiple
// of the number of masters, every master holds as many partitions. For
// count 1 the one prefix is Prefix: its keys are those of a deployment
// from before partitions existed.
func (n Namespace) PartitionPrefixes(count int) []string {
	if count <= 1 {
		return []string{n.Prefix()}
	}
	out := make([]string, count)
	used := map[int]bool{}
	for k := range out {
		for j := 0; ; j++ {
			tag := n.name + ":p" + strconv.Itoa(j)
			if !used[j] && Slot(tag)*count/SlotCount == k {
				used[j] = true
				out[k] = "{" + tag + "}:"
				break
			}
		}
	}
	return out
}

// SlotCount is the number of Redis Cluster hash slots.
const SlotCount = 16384

// Slot is the Redis Cluster hash slot of a hash tag's content (CRC16,
// XMODEM, mod 16384): keys "{tag}:…" live in that slot.
func Slot(tag string) int {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % SlotCount
}

// Pattern is a SCAN/KEYS match pattern of every key of the namespace
// outside its partitions (and of all its keys when it has one partition);
// a partition's prefix plus "*" matches that partition's.
func (n Namespace) Pattern() string { return n.Prefix() + "*" }
