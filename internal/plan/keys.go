package plan

import "strconv"

// Redis keys the plan engine reads (and `taskflow seed-demo` writes), all
// under the engine's key prefix (Config.KeyPrefix, "" by default, which is
// what the reference engine reads):
//
//	user:{id}            hash   field country (string) — viewer, hydration
//	follow:{id}          list   followed user ids       — core::follow
//	recommendation:{id}  list   recommended user ids    — core::recommendation
//	media:{id}           list   media ids               — core::media

// Kinds of key: the part between the prefix and the id.
const (
	userKind           = "user:"
	followKind         = "follow:"
	recommendationKind = "recommendation:"
	mediaKind          = "media:"
)

func userKey(prefix string, id int64) string { return prefix + userKind + strconv.FormatInt(id, 10) }

func followKey(prefix string, id int64) string {
	return prefix + followKind + strconv.FormatInt(id, 10)
}

func recommendationKey(prefix string, id int64) string {
	return prefix + recommendationKind + strconv.FormatInt(id, 10)
}

func mediaKey(prefix string, id int64) string { return prefix + mediaKind + strconv.FormatInt(id, 10) }

// idKeys returns prefix + kind + id for n ids (id(i) is the i-th), built
// in one buffer: two allocations for a whole fan-out step instead of two
// per key.
func idKeys(prefix, kind string, n int, id func(i int) int64) []string {
	buf := make([]byte, 0, n*(len(prefix)+len(kind)+8))
	ends := make([]int, n)
	for i := range n {
		buf = append(append(buf, prefix...), kind...)
		buf = strconv.AppendInt(buf, id(i), 10)
		ends[i] = len(buf)
	}
	all := string(buf)
	keys := make([]string, n)
	start := 0
	for i, end := range ends {
		keys[i], start = all[start:end], end
	}
	return keys
}

// countryField is the user hash field hydrated into the country key.
const countryField = "country"
