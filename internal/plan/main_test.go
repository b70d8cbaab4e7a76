package plan_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/plan/registry"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// against a Redis Cluster, rueidis's cluster client refreshes its
		// slot map on a goroutine that sleeps out its retry delay after
		// Close and then ends by itself
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}

// bundle is one test's engine over its own Redis namespace holding the demo data.
type bundle struct {
	eng    *plan.Engine
	rdb    redis.UniversalClient
	prefix string
	reg    *registry.Registry
}

func setup(t testing.TB, mods ...func(*plan.Config)) *bundle {
	t.Helper()
	c, ns := testredis.Client(t)
	prefix := ns + ":"
	_, err := plan.Seed(context.Background(), c, prefix, plan.Demo())
	require.NoError(t, err)
	reg, err := registry.Default("dev")
	require.NoError(t, err)
	cfg := plan.Config{Registry: reg, RedisURL: testredis.URL(), KeyPrefix: prefix}
	for _, m := range mods {
		m(&cfg)
	}
	eng, err := plan.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, eng.Close()) })
	return &bundle{eng: eng, rdb: c, prefix: prefix, reg: reg}
}

// compile parses and compiles an inline plan.
func (b *bundle) compile(t testing.TB, src string) *plan.Compiled {
	t.Helper()
	p, err := plan.Parse([]byte(src), "inline")
	require.NoError(t, err)
	c, err := b.eng.Compile(p)
	require.NoError(t, err)
	return c
}

func (b *bundle) load(t testing.TB, name string) *plan.Compiled {
	t.Helper()
	c, err := b.eng.Load(filepath.Join("testdata", "plans", name+".plan.json"))
	require.NoError(t, err)
	return c
}

// run runs c for user and returns the candidates as decoded JSON.
func (b *bundle) run(t testing.TB, c *plan.Compiled, req *plan.Request, opts plan.RunOptions) []cand {
	t.Helper()
	res, err := b.eng.Run(context.Background(), c, req, opts)
	require.NoError(t, err)
	return decode(t, b.reg, res)
}

type cand struct {
	ID     int64          `json:"id"`
	Fields map[string]any `json:"fields"`
}

func decode(t testing.TB, reg *registry.Registry, res *plan.Result) []cand {
	t.Helper()
	line := plan.AppendCandidates(nil, res.Outputs, reg)
	var out []cand
	require.NoError(t, json.Unmarshal(line, &out), string(line))
	return out
}

func ids(cs []cand) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func user(id int64) *plan.Request { return &plan.Request{RequestID: "t", UserID: id} }

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// country is the demo data's rule for a user's country ("" when none).
func country(id int64) string {
	switch {
	case id == 1:
		return "US"
	case id == 123:
		return "CA"
	case id == 456:
		return "UK"
	case id == 789:
		return "MX"
	case id >= 2 && id <= 10 && id%2 == 0:
		return "CA"
	case id >= 2 && id <= 10:
		return "US"
	case id >= 1001 && id <= 1010:
		return "US"
	}
	return ""
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func mustContain(t testing.TB, err error, want string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), want), "error %q does not contain %q", err.Error(), want)
}
