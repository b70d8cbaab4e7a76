package planapi

import (
	"context"
	"encoding/json"
	"strconv"
)

// TraceLine is one node's line of a traced run. Times are whole
// microseconds since the run started: plan.NodeTrace holds them as
// durations, which JSON would write as nanoseconds.
type TraceLine struct {
	NodeID string `json:"node_id"`
	Op     string `json:"op"`
	// Kind is "IO" or "CPU"; Place where it ran: io, pool, inline or fused.
	Kind       string `json:"kind" openapi:"enum=IO|CPU"`
	Place      string `json:"place" openapi:"enum=io|pool|inline|fused" jsonschema:"where it ran: its own goroutine, the CPU pool, inline on the goroutine that readied it, or the pool slot of the CPU node before it"`
	StartUS    int64  `json:"start_us" jsonschema:"microseconds from the run's start to the node's"`
	EndUS      int64  `json:"end_us" jsonschema:"microseconds from the run's start to the node's end"`
	RowsIn     int    `json:"rows_in" jsonschema:"rows of the nodes it read"`
	RowsOut    int    `json:"rows_out"`
	RoundTrips int    `json:"redis_round_trips"`
	Error      string `json:"error,omitempty" jsonschema:"the node failed: why"`
}

// ExecuteTraced runs plan name for in as Execute does and returns rankd's
// success line with two more fields: "trace", one TraceLine per node that
// ran, in the plan's order, and "elapsed_us", the run's wall time. The
// line stays one JSON object, so a client reading the plain answer reads
// this one too.
func (s *Service) ExecuteTraced(ctx context.Context, name string, in *Input) (json.RawMessage, error) {
	out, res, err := s.execute(ctx, name, in, true)
	if err != nil {
		return nil, err
	}
	lines := make([]TraceLine, 0, len(res.Trace))
	for _, t := range res.Trace {
		lines = append(lines, TraceLine{NodeID: t.NodeID, Op: t.Op, Kind: t.Kind, Place: string(t.Place),
			StartUS: t.Start.Microseconds(), EndUS: t.End.Microseconds(), RowsIn: t.RowsIn, RowsOut: t.RowsOut,
			RoundTrips: t.RoundTrips, Error: t.Err})
	}
	tr, err := json.Marshal(lines)
	if err != nil {
		return nil, err
	}
	// out is an object: its closing brace gives way to the two fields.
	out = append(out[:len(out)-1], `,"trace":`...)
	out = append(out, tr...)
	out = append(out, `,"elapsed_us":`...)
	out = strconv.AppendInt(out, res.Elapsed.Microseconds(), 10)
	return append(out, '}'), nil
}
