package protocol

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// marshalled is json.Marshal's output with raw values as appendRaw writes
// them (compacted, HTML characters inside them not escaped).
func marshalled(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

var tricky = []string{"", "plain", `quote " and \ backslash`, "tab\tnew\nline\rcr", "\b\f\x00\x01\x1f\x7f",
	"<script>&amp;</script>", "é ü 日本 🎉", "\u2028 and \u2029", "bad \xff\xfe utf8", string([]byte{0xe2, 0x82}), "\U0010FFFF"}

// TestHandEncodingIsJSONMarshal: task.create and task.completed data
// encoded by hand are byte for byte what encoding/json writes.
func TestHandEncodingIsJSONMarshal(t *testing.T) {
	for _, s := range tricky {
		for _, f := range []float64{0, 0.5, 1, 1.5, 300, 1e-7, 1e21, 123456789.125, 7 * 24 * 3600} {
			cd := CreateData{TaskID: s, TaskType: "report.q4", Params: json.RawMessage(`{"a":[1,2,{"b":"c"}],"n":null}`), SessionID: s,
				Timeout: f, Priority: "high", CreatedBy: s, Attempt: len(s), Token: s, Traceparent: s}
			got, fast, err := appendData(nil, cd)
			require.True(t, fast)
			require.NoError(t, err)
			require.Equal(t, string(marshalled(t, cd)), string(got), "%q %v", s, f)
			got, _, err = appendData(nil, &cd)
			require.NoError(t, err)
			require.Equal(t, string(marshalled(t, cd)), string(got))
		}
		cp := CompletedData{TaskID: s, Status: "success", Result: json.RawMessage(`{"summary":"ok","n":1.5e3}`), DurationMS: int64(len(s)) * 7,
			CompletedBy: s, Token: s, Traceparent: s}
		got, fast, err := appendData(nil, &cp)
		require.True(t, fast)
		require.NoError(t, err)
		require.Equal(t, string(marshalled(t, cp)), string(got), "%q", s)
	}
	// empty raw values are null, as a nil json.RawMessage; spaces go
	got, _, err := appendData(nil, CompletedData{TaskID: "t", Status: "success"})
	require.NoError(t, err)
	require.Equal(t, string(marshalled(t, CompletedData{TaskID: "t", Status: "success"})), string(got))
	got, _, err = appendData(nil, CreateData{TaskID: "t", Params: json.RawMessage(" { \"a\" : 1 } ")})
	require.NoError(t, err)
	require.Equal(t, string(marshalled(t, CreateData{TaskID: "t", Params: json.RawMessage(`{"a":1}`)})), string(got))
	// what encoding/json refuses is refused
	_, _, err = appendData(nil, CreateData{TaskID: "t", Params: json.RawMessage(`{"a":`)})
	require.Error(t, err)
	_, _, err = appendData(nil, CreateData{TaskID: "t", Timeout: math.NaN()})
	require.Error(t, err)
	_, err = New(TypeCreate, time.Unix(1700000000, 0), CreateData{TaskID: "t", Params: json.RawMessage(`nope`)})
	require.Error(t, err)
	// other types are left to encoding/json
	_, fast, _ := appendData(nil, CancelData{TaskID: "t"})
	require.False(t, fast)
}

// FuzzHandEncoding: for any strings and raw values, the hand encoding
// and encoding/json agree (both refuse, or give the same JSON once the raw
// value is compacted alike).
func FuzzHandEncoding(f *testing.F) {
	for _, s := range tricky {
		f.Add(s, `{"a":1}`, 1.5, int64(3))
	}
	f.Fuzz(func(t *testing.T, s, raw string, timeout float64, n int64) {
		if raw == "" {
			// a nil raw value is null for both; an empty, non-nil one
			// encoding/json refuses and the hand encoding writes as null
			raw = "null"
		}
		cd := CreateData{TaskID: s, TaskType: s, Params: json.RawMessage(raw), SessionID: s, Timeout: timeout, Priority: s,
			CreatedBy: s, Attempt: int(n), Token: s, Traceparent: s}
		got, _, err := appendData(nil, cd)
		want, werr := json.Marshal(cd)
		if werr != nil {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		var va, vb any
		require.NoError(t, json.Unmarshal(want, &va))
		require.NoError(t, json.Unmarshal(got, &vb))
		require.Equal(t, va, vb)
		cp := CompletedData{TaskID: s, Status: s, Result: json.RawMessage(raw), DurationMS: n, CompletedBy: s, Token: s, Traceparent: s}
		got, _, err = appendData(nil, cp)
		want, werr = json.Marshal(cp)
		if werr != nil {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(want, &va))
		require.NoError(t, json.Unmarshal(got, &vb))
		require.Equal(t, va, vb)
	})
}
