package tasktypes_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc/param"
	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/tasktypes"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

func TestNewRefusesCollisions(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]tasktypes.Config{
		"NoName":        {Local: []tasktypes.Type{{}}},
		"TwiceLocal":    {Local: []tasktypes.Type{{Name: "a"}, {Name: "a"}}},
		"LocalExternal": {Local: []tasktypes.Type{{Name: "a"}}, External: []string{"a"}},
		"TwiceExternal": {External: []string{"b", "b"}},
		"EmptyExternal": {External: []string{""}},
	} {
		_, err := tasktypes.New(cfg)
		require.Error(t, err, name)
	}
}

// A published spec describes an external type and its params are checked
// as the service declared them; until then the type takes any params; a
// published type the deployment does not list is not accepted; a new
// publication is seen once Refresh has passed.
func TestPublishedSpecs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, ns := testredis.Client(t)
	keys := protocol.NewKeys(keyspace.MustParse(ns))
	clk := clock.NewFake(time.Now())
	reg, err := tasktypes.New(tasktypes.Config{
		Local:    []tasktypes.Type{{Name: "noop", Description: "does nothing", Params: param.Schema{AllowUnknown: true}}},
		External: []string{"report.generate", "x.y"}, Redis: rdb, Keys: keys, Now: clk.Now})
	require.NoError(t, err)
	require.Equal(t, []string{"noop", "report.generate", "x.y"}, reg.Names())

	rep, ok := reg.Lookup(ctx, "report.generate")
	require.True(t, ok)
	require.True(t, rep.External)
	require.Equal(t, map[string]any{"type": "object"}, rep.Schema())
	require.NoError(t, rep.CheckParams(json.RawMessage(`{"anything":1}`)), "nothing published: not checked")

	sch := param.Schema{Fields: []param.Field{{Name: "quarter", Kind: param.String, Required: true, Enum: []string{"Q1", "Q2", "Q3", "Q4"}}}}
	raw, err := json.Marshal(sch.JSONSchema())
	require.NoError(t, err)
	spec, err := json.Marshal(protocol.TypeSpec{Service: "report-service", Description: "reports", Params: raw, Notify: "Your {quarter} report is ready"})
	require.NoError(t, err)
	require.NoError(t, rdb.HSet(ctx, keys.TaskTypes(), "report.generate", spec, "other.type", spec).Err())

	rep, _ = reg.Lookup(ctx, "report.generate")
	require.Empty(t, rep.Service, "the empty read is reused until Refresh passes")
	clk.Advance(3 * time.Second)
	rep, _ = reg.Lookup(ctx, "report.generate")
	require.Equal(t, "report-service", rep.Service)
	require.Equal(t, "reports", rep.Description)
	require.Equal(t, []any{"quarter"}, rep.Schema()["required"])
	var pe *param.Error
	require.True(t, errors.As(rep.CheckParams(json.RawMessage(`{"quarter":"Q9"}`)), &pe))
	require.Equal(t, "quarter", pe.Field)
	require.NoError(t, rep.CheckParams(json.RawMessage(`{"quarter":"Q4"}`)))
	require.Equal(t, "Your Q4 report is ready", tasktypes.Render(rep.Notify, json.RawMessage(`{"quarter":"Q4"}`)))
	require.Equal(t, "Your Q4 report is ready", reg.ReadyMessage(ctx, "report.generate", json.RawMessage(`{"quarter":"Q4"}`)))
	require.Equal(t, "Your noop task is ready!", reg.ReadyMessage(ctx, "noop", nil), "no template: the generic text")
	require.Equal(t, "Your noop task is ready!", (*tasktypes.Registry)(nil).ReadyMessage(ctx, "noop", nil))

	_, ok = reg.Lookup(ctx, "other.type")
	require.False(t, ok, "published but not an accepted type")
	list := reg.List(ctx)
	require.Len(t, list, 3)
	require.Equal(t, "does nothing", list[0].Description)

	// A spec whose schema this registry cannot read leaves the type
	// unchecked rather than refusing every submit.
	require.NoError(t, rdb.HSet(ctx, keys.TaskTypes(), "x.y", `{"service":"s","params_schema":{"type":"array"}}`).Err())
	clk.Advance(3 * time.Second)
	xy, _ := reg.Lookup(ctx, "x.y")
	require.Equal(t, "s", xy.Service)
	require.NoError(t, xy.CheckParams(json.RawMessage(`{"a":1}`)))
}

func TestRender(t *testing.T) {
	t.Parallel()
	p := json.RawMessage(`{"quarter":"Q4","year":2024,"tags":["a"]}`)
	for tmpl, want := range map[string]string{
		"Your {quarter} {year} report is ready": "Your Q4 2024 report is ready",
		"no placeholders":                       "no placeholders",
		"{missing} stays":                       "{missing} stays",
		"{tags}":                                `["a"]`,
		"{ quarter }":                           "{ quarter }",
	} {
		require.Equal(t, want, tasktypes.Render(tmpl, p), tmpl)
	}
	require.Equal(t, "{x}", tasktypes.Render("{x}", json.RawMessage(`not json`)))
}

// The plan-like Check runs after the declared params.
func TestCheckRunsAfterParams(t *testing.T) {
	t.Parallel()
	called := 0
	tt := tasktypes.Type{Name: "p", Params: param.Schema{Fields: []param.Field{{Name: "n", Kind: param.Integer, Required: true}}},
		Check: func(json.RawMessage) error { called++; return errors.New("no such plan") }}
	require.Error(t, tt.CheckParams(json.RawMessage(`{}`)))
	require.Zero(t, called)
	require.EqualError(t, tt.CheckParams(json.RawMessage(`{"n":1}`)), "no such plan")
	require.Equal(t, 1, called)
}
