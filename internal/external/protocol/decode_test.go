package protocol

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

var decodeSeeds = []string{
	`{"task_id":"t1","task_type":"report.q4","params":{"a":[1,{"b":"c\"d"}]},"session_id":"s","timeout":300,"priority":"high","created_by":"agent","attempt":2,"token":"w/1","traceparent":"00-ab-cd-01"}`,
	`{"task_id":"t1","status":"success","result":{"file_url":"x"},"duration_ms":12,"completed_by":"svc","token":"w/1"}`,
	` { "task_id" : "t1" , "params" : null , "timeout" : 0.5 , "extra" : [true, false, null, "x\\y"] } `,
	`{"Task_ID":"t1"}`, `{"task_id":"t\u00e9"}`, `{"task_id":1}`, `{"attempt":1.5}`, `{"attempt":1e3}`, `{"timeout":1e400}`,
	`{"duration_ms":-3}`, `{"task_id":null,"result":null}`, `{"task_id":"a","task_id":"b"}`, `{}`, `[]`, `{"a":`, `null`,
	"{\"task_id\":\"\xff\"}", `{"token":"x","traceparent":null,"params":"str","result":7}`,
}

// TestDecodeFast: events in the plain form are decoded by hand, exactly
// as encoding/json decodes them; the rest is left to encoding/json.
func TestDecodeFast(t *testing.T) {
	var c CreateData
	require.True(t, decodeFast([]byte(decodeSeeds[0]), false, &c))
	require.Equal(t, CreateData{TaskID: "t1", TaskType: "report.q4", Params: json.RawMessage(`{"a":[1,{"b":"c\"d"}]}`), SessionID: "s",
		Timeout: 300, Priority: "high", CreatedBy: "agent", Attempt: 2, Token: "w/1", Traceparent: "00-ab-cd-01"}, c)
	var d CompletedData
	require.True(t, decodeFast([]byte(decodeSeeds[1]), false, &d))
	require.Equal(t, CompletedData{TaskID: "t1", Status: "success", Result: json.RawMessage(`{"file_url":"x"}`), DurationMS: 12,
		CompletedBy: "svc", Token: "w/1"}, d)
	for _, s := range []string{`{"Task_ID":"t1"}`, `{"task_id":"t\u00e9"}`, `{"task_id":1}`, `{"attempt":1.5}`, `{"a":`} {
		require.False(t, decodeFast([]byte(s), false, &CreateData{}), s)
	}
	require.False(t, decodeFast([]byte(`{}`), false, &CancelData{}), "other types go to encoding/json")
	for _, s := range decodeSeeds {
		checkDecode(t, s)
	}
}

// checkDecode: when decodeFast takes data, encoding/json takes it too and
// gives the same values.
func checkDecode(t *testing.T, data string) {
	t.Helper()
	var fc, jc CreateData
	if decodeFast([]byte(data), false, &fc) {
		require.NoError(t, json.Unmarshal([]byte(data), &jc), data)
		require.Equal(t, jc, fc, data)
	}
	var fd, jd CompletedData
	if decodeFast([]byte(data), false, &fd) {
		require.NoError(t, json.Unmarshal([]byte(data), &jd), data)
		require.Equal(t, jd, fd, data)
	}
}

// FuzzDecodeFast: for any input, the hand decoder either declines or
// agrees with encoding/json.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) { checkDecode(t, data) })
}
