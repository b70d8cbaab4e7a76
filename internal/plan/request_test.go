package plan_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/plan/ir"
	"github.com/taskflow/taskflow/internal/plan/registry"
)

func TestParseRequest(t *testing.T) {
	t.Parallel()
	reg, err := registry.Default("dev")
	require.NoError(t, err)
	ok := []struct {
		name, in string
		want     plan.Request
	}{
		{"Minimal", `{"user_id":1}`, plan.Request{UserID: 1}},
		{"DecimalString", `{"user_id":"123","request_id":"r"}`, plan.Request{UserID: 123, RequestID: "r"}},
		{"IntegralFloat", `{"user_id":7.0}`, plan.Request{UserID: 7}},
		{"NullOverrides", `{"user_id":1,"param_overrides":null}`, plan.Request{UserID: 1}},
		{"Overrides", `{"user_id":1,"param_overrides":{"media_age_penalty_weight":0.5,"blocklist_regex":null,"weight":2}}`,
			plan.Request{UserID: 1, Params: ir.Params{1: {Kind: ir.Number, Num: 0.5}, 2: {Kind: ir.Null}, 4: {Kind: ir.Number, Num: 2}}}},
		{"UnknownFieldIgnored", `{"user_id":1,"deadline_ms":5}`, plan.Request{UserID: 1}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := plan.ParseRequest([]byte(tc.in), reg)
			require.NoError(t, err)
			require.Equal(t, tc.want, *got)
		})
	}
	bad := []struct {
		name, in, kind, detail string
	}{
		{"NotJSON", `{`, plan.ErrKindJSON, ""},
		{"Empty", ``, plan.ErrKindJSON, ""},
		{"NotObject", `[1]`, plan.ErrKindRequest, "request must be a JSON object"},
		{"MissingUser", `{}`, plan.ErrKindRequest, "missing required field: user_id"},
		{"NullUser", `{"user_id":null}`, plan.ErrKindRequest, "missing required field: user_id"},
		{"ZeroUser", `{"user_id":0}`, plan.ErrKindRequest, "positive integer"},
		{"NegativeUser", `{"user_id":-3}`, plan.ErrKindRequest, "positive integer"},
		{"FractionUser", `{"user_id":1.5}`, plan.ErrKindRequest, "positive integer"},
		{"BadStringUser", `{"user_id":"12a"}`, plan.ErrKindRequest, "positive integer"},
		{"SignedStringUser", `{"user_id":"+5"}`, plan.ErrKindRequest, "positive integer"},
		{"HugeStringUser", `{"user_id":"99999999999999999999"}`, plan.ErrKindRequest, "positive integer"},
		{"BoolUser", `{"user_id":true}`, plan.ErrKindRequest, "positive integer"},
		{"RequestIDNumber", `{"user_id":1,"request_id":5}`, plan.ErrKindRequest, "request_id must be a string"},
		{"OverridesNotObject", `{"user_id":1,"param_overrides":[1]}`, plan.ErrKindParams, "param_overrides must be an object"},
		{"UnknownParam", `{"user_id":1,"param_overrides":{"nope":1}}`, plan.ErrKindParams, "unknown param 'nope'"},
		{"WrongType", `{"user_id":1,"param_overrides":{"esr_cutoff":"x"}}`, plan.ErrKindParams, "must be of type float"},
		{"StringParamNumber", `{"user_id":1,"param_overrides":{"blocklist_regex":5}}`, plan.ErrKindParams, "must be of type string"},
		{"NullNotNullable", `{"user_id":1,"param_overrides":{"esr_cutoff":null}}`, plan.ErrKindParams, "is not nullable"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := plan.ParseRequest([]byte(tc.in), reg)
			var re *plan.RequestError
			require.True(t, errors.As(err, &re), "got %v", err)
			require.Equal(t, tc.kind, re.Kind)
			require.Contains(t, re.Detail, tc.detail)
		})
	}
}

func TestAppendFloat(t *testing.T) {
	t.Parallel()
	cases := map[float64]string{
		1: "1.0", 0: "0.0", math.Copysign(0, -1): "-0.0", -2.5: "-2.5", 0.6000000000000001: "0.6000000000000001",
		0.8: "0.8", 1.2000000000000002: "1.2000000000000002", 100: "100.0", 123456789: "123456789.0",
		1e14: "100000000000000.0", 1e15: "1e+15", 1e16: "1e+16", 1.5e20: "1.5e+20", 0.001: "0.001", 0.0001: "0.0001",
		0.00001: "1e-05", 1.25e-7: "1.25e-07", 1e100: "1e+100", -1e-300: "-1e-300", 5e-324: "5e-324",
		100.60000000000001: "100.60000000000001",
	}
	for f, want := range cases {
		require.Equal(t, want, string(plan.AppendFloat(nil, f)), "%v", f)
	}
}

func FuzzParseRequest(f *testing.F) {
	reg, err := registry.Default("dev")
	require.NoError(f, err)
	for _, s := range []string{`{"user_id":1}`, `{"user_id":"5","request_id":"x","param_overrides":{"weight":1,"blocklist_regex":"a"}}`,
		`{`, `[]`, `{"user_id":1e400}`, `{"user_id":-0}`, `{"param_overrides":{"esr_cutoff":null},"user_id":3}`, "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := plan.ParseRequest(data, reg)
		if err != nil {
			var re *plan.RequestError
			if !errors.As(err, &re) || re.Detail == "" {
				t.Fatalf("error without a kind and detail: %v", err)
			}
			return
		}
		if req.UserID <= 0 {
			t.Fatalf("accepted user_id %d", req.UserID)
		}
	})
}
