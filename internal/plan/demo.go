package plan

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// DemoData is the data the reference's plans expect: user hashes with a
// country, and follow / recommendation / media lists.
type DemoData struct {
	Users map[int64]string   // user id → country
	Lists map[string][]int64 // "follow:1" style name (without prefix) → ids
}

// Demo returns the demo data set.
func Demo() DemoData {
	d := DemoData{Users: map[int64]string{1: "US", 123: "CA", 456: "UK", 789: "MX"}, Lists: map[string][]int64{}}
	for id := int64(2); id <= 10; id++ {
		if id%2 == 0 {
			d.Users[id] = "CA"
		} else {
			d.Users[id] = "US"
		}
	}
	for id := int64(1001); id <= 1010; id++ {
		d.Users[id] = "US"
	}
	d.Lists[followKey("", 1)] = seq(1, 10)
	d.Lists[followKey("", 123)] = seq(1, 5)
	d.Lists[recommendationKey("", 1)] = seq(1001, 1010)
	d.Lists[recommendationKey("", 123)] = seq(1021, 1025)
	d.Lists[mediaKey("", 1)] = seq(1001, 1003)
	d.Lists[mediaKey("", 2)] = seq(1004, 1006)
	d.Lists[mediaKey("", 11)] = seq(1101, 1103)
	d.Lists[mediaKey("", 12)] = seq(1104, 1106)
	return d
}

func seq(from, to int64) []int64 {
	out := make([]int64, 0, to-from+1)
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// Seed writes d under prefix: each list it owns is replaced (DEL + RPUSH),
// each user hash gets its country field. Nothing else is touched; running
// it twice gives the same data. On a single server it is one MULTI; on a
// Redis Cluster, whose nodes refuse a transaction across slots (the demo
// keys carry no hash tag: the reference engine reads them as they are),
// one pipeline routed key by key. It returns the number of keys written.
func Seed(ctx context.Context, c redis.UniversalClient, prefix string, d DemoData) (int, error) {
	run := c.TxPipelined
	if _, ok := c.(*redis.ClusterClient); ok {
		run = c.Pipelined
	}
	_, err := run(ctx, func(p redis.Pipeliner) error {
		for id, country := range d.Users {
			p.HSet(ctx, userKey(prefix, id), countryField, country)
		}
		for name, ids := range d.Lists {
			key := prefix + name
			p.Del(ctx, key)
			vals := make([]any, len(ids))
			for i, id := range ids {
				vals[i] = id
			}
			p.RPush(ctx, key, vals...)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("seed demo data: %w", err)
	}
	return len(d.Users) + len(d.Lists), nil
}
