package protocol

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEventRoundTrip(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 1, 1, 12, 0, 0, 123456789, time.UTC)
	in := CreateData{TaskID: "task-1", TaskType: "report.generate", Params: json.RawMessage(`{"quarter":"Q4","year":2024}`),
		SessionID: "user-123", Timeout: 300, Priority: "normal", CreatedBy: "agent", Attempt: 1, Token: "tok"}
	e, err := New(TypeCreate, now, in)
	require.NoError(t, err)
	vals := map[string]any{}
	v := e.Values()
	for i := 0; i < len(v); i += 2 {
		vals[v[i].(string)] = v[i+1]
	}
	require.Equal(t, "2024-01-01T12:00:00.123Z", vals["timestamp"])
	got, err := Decode("1-0", vals)
	require.NoError(t, err)
	require.Equal(t, e.ID, got.ID)
	require.Equal(t, TypeCreate, got.Type)
	require.True(t, now.Truncate(time.Millisecond).Equal(got.Timestamp))
	d, err := As[CreateData](got)
	require.NoError(t, err)
	require.Equal(t, in.TaskID, d.TaskID)
	require.JSONEq(t, string(in.Params), string(d.Params))
	require.Equal(t, 300.0, d.Timeout)

	_, err = As[CompletedData](got)
	require.ErrorIs(t, err, ErrInvalidEvent)
}

// TestSpecExamples decodes the event examples the protocol started from
// (the shapes docs/protocol.md shows) as a service in another language
// would publish them.
func TestSpecExamples(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		typ  Type
		data string
	}{
		"Create":    {TypeCreate, `{"task_id":"task-uuid","task_type":"report.generate","params":{"quarter":"Q4","year":2024,"format":"pdf"},"session_id":"user-123","timeout":300,"priority":"normal","created_by":"agent"}`},
		"Completed": {TypeCompleted, `{"task_id":"task-uuid","status":"success","result":{"file_url":"https://storage/report.pdf","summary":"Report generated successfully","metadata":{}},"duration_ms":300000,"completed_by":"report-service"}`},
		"Failed":    {TypeFailed, `{"task_id":"task-uuid","status":"failed","error":{"code":"INSUFFICIENT_DATA","message":"Not enough data for Q4 2024","details":{}},"duration_ms":120000,"failed_by":"report-service"}`},
		"Timeout":   {TypeTimeout, `{"task_id":"task-uuid","status":"timeout","message":"Task exceeded timeout of 300 seconds","elapsed_ms":600000}`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, err := Decode("1-0", map[string]any{"event_id": "0b4f1a3e-8d7a-4a57-9e4c-2b1f0d6c7e11", "event_type": string(c.typ),
				"timestamp": "2024-01-01T12:05:00.000Z", "data": c.data})
			require.NoError(t, err)
			_, err = e.Unmarshal()
			require.NoError(t, err)
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	ok := map[string]any{"event_id": "e1", "event_type": "task.completed", "timestamp": "2024-01-01T12:05:00.000Z",
		"data": `{"task_id":"t1","status":"success","result":{}}`}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range ok {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	cases := map[string]struct {
		vals  map[string]any
		field string
	}{
		"MissingEventID":  {with("event_id", nil), "event_id"},
		"SpaceInEventID":  {with("event_id", "a b"), "event_id"},
		"UnknownType":     {with("event_type", "task.exploded"), "event_type"},
		"BadTimestamp":    {with("timestamp", "yesterday"), "timestamp"},
		"DataNotObject":   {with("data", `[1,2]`), "data"},
		"DataNotJSON":     {with("data", `{"task_id":`), "data"},
		"DataWrongGoType": {with("data", 42), "data"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode("1-0", c.vals)
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "err = %v", err)
			require.Equal(t, c.field, fe.Field)
			require.ErrorIs(t, err, ErrInvalidEvent)
		})
	}
}

func TestDataValidation(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		typ   Type
		data  string
		field string
	}{
		"CreateNoTaskID":       {TypeCreate, `{"task_type":"a.b"}`, "data.task_id"},
		"CreateBadType":        {TypeCreate, `{"task_id":"t","task_type":"Bad Type"}`, "data.task_type"},
		"CreateParamsArray":    {TypeCreate, `{"task_id":"t","task_type":"a","params":[1]}`, "data.params"},
		"CreateBadPriority":    {TypeCreate, `{"task_id":"t","task_type":"a","priority":"urgent"}`, "data.priority"},
		"CreateNegTimeout":     {TypeCreate, `{"task_id":"t","task_type":"a","timeout":-1}`, "data.timeout"},
		"CompletedWrongStatus": {TypeCompleted, `{"task_id":"t","status":"failed"}`, "data.status"},
		"CompletedResultStr":   {TypeCompleted, `{"task_id":"t","status":"success","result":"x"}`, "data.result"},
		"FailedNoCode":         {TypeFailed, `{"task_id":"t","status":"failed","error":{"message":"m"}}`, "data.error.code"},
		"ProgressOver100":      {TypeProgress, `{"task_id":"t","percent":101}`, "data.percent"},
		"TimeoutWrongStatus":   {TypeTimeout, `{"task_id":"t","status":"late"}`, "data.status"},
		"FieldWrongJSONType":   {TypeCreate, `{"task_id":5,"task_type":"a"}`, "data"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Event{ID: "e", Type: c.typ, Data: json.RawMessage(c.data)}.Unmarshal()
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "err = %v", err)
			require.Equal(t, c.field, fe.Field)
		})
	}
}

func TestIsTransient(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	require.True(t, ErrorInfo{Code: "SERVICE_UNAVAILABLE"}.IsTransient())
	require.True(t, ErrorInfo{Code: "rate_limited"}.IsTransient())
	require.False(t, ErrorInfo{Code: "INSUFFICIENT_DATA"}.IsTransient())
	require.True(t, ErrorInfo{Code: "INSUFFICIENT_DATA", Retryable: &yes}.IsTransient())
	require.False(t, ErrorInfo{Code: "TIMEOUT", Retryable: &no}.IsTransient())
}

func FuzzDecode(f *testing.F) {
	f.Add("e1", "task.create", "2024-01-01T12:00:00.000Z", `{"task_id":"t","task_type":"report.generate","params":{"a":1},"timeout":300}`)
	f.Add("e2", "task.completed", "2024-01-01T12:05:00Z", `{"task_id":"t","status":"success","result":{"file_url":"x"}}`)
	f.Add("e3", "task.failed", "2024-01-01T12:05:00.1+02:00", `{"task_id":"t","status":"failed","error":{"code":"X","message":"m"}}`)
	f.Add("e4", "task.progress", "2024-01-01T12:05:00.000Z", `{"task_id":"t","percent":50.5,"eta_seconds":3}`)
	f.Add("", "", "", "")
	f.Add("e5", "task.timeout", "bad", `{`)
	f.Fuzz(func(t *testing.T, id, typ, ts, data string) {
		e, err := Decode("1-0", map[string]any{"event_id": id, "event_type": typ, "timestamp": ts, "data": data})
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidEvent)
			return
		}
		v, err := e.Unmarshal()
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidEvent)
			return
		}
		require.NotNil(t, v)
		// What decodes must survive a re-encode.
		vals := map[string]any{}
		kv := e.Values()
		for i := 0; i < len(kv); i += 2 {
			vals[kv[i].(string)] = kv[i+1]
		}
		e2, err := Decode("1-0", vals)
		require.NoError(t, err)
		require.Equal(t, e.ID, e2.ID)
		require.True(t, e.Timestamp.Truncate(time.Millisecond).Equal(e2.Timestamp))
	})
}
