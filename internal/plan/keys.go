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

func userKey(prefix string, id int64) string { return prefix + "user:" + strconv.FormatInt(id, 10) }

func followKey(prefix string, id int64) string {
	return prefix + "follow:" + strconv.FormatInt(id, 10)
}

func recommendationKey(prefix string, id int64) string {
	return prefix + "recommendation:" + strconv.FormatInt(id, 10)
}

func mediaKey(prefix string, id int64) string { return prefix + "media:" + strconv.FormatInt(id, 10) }

// countryField is the user hash field hydrated into the country key.
const countryField = "country"
