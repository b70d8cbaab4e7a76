package planapi

// The JSON of a run over the API. The request is read field by field
// (ParseInput names each wrong field) and the answer is written by
// plan.AppendOutput and ExecuteTraced, so these types only describe them:
// the API's OpenAPI schemas are derived from them, and the tests decode
// real answers into them, refusing any other field.

// RunRequest is the body of a plan run: rankd's request plus the run's
// deadlines (inputFields names the same fields).
type RunRequest struct {
	UserID         any            `json:"user_id" openapi:"required;type=integer|string;minimum=1;example=1" jsonschema:"the user the plan ranks for (a positive integer, or its decimal string)"`
	RequestID      string         `json:"request_id,omitempty" jsonschema:"echoed in the answer; absent = a new UUID"`
	ParamOverrides map[string]any `json:"param_overrides,omitempty" jsonschema:"plan params by name (registry/params.toml)"`
	DeadlineMS     float64        `json:"deadline_ms,omitempty" jsonschema:"the whole run's deadline in ms (default 1000, at most 30000)"`
	NodeTimeoutMS  float64        `json:"node_timeout_ms,omitempty" jsonschema:"each node's timeout in ms"`
}

// Answer is a run's answer: rankd's success line, and with a trace
// (ExecuteTraced) the per-node timeline and the run's wall time.
type Answer struct {
	RequestID       string      `json:"request_id" jsonschema:"the request's request_id (or the one made for it)"`
	EngineRequestID string      `json:"engine_request_id" jsonschema:"this run's own id"`
	Candidates      []Candidate `json:"candidates"`
	Trace           []TraceLine `json:"trace,omitempty" jsonschema:"with ?trace=1 only: one line per node that ran, in the plan's order"`
	ElapsedUS       *int64      `json:"elapsed_us,omitempty" jsonschema:"with ?trace=1 only: the run's wall time in microseconds"`
}

// Candidate is one row of the answer.
type Candidate struct {
	ID     int64          `json:"id" openapi:"format=int64"`
	Fields map[string]any `json:"fields" openapi:"type=number|string" jsonschema:"non-null columns by key name"`
}
