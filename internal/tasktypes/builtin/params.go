package builtin

import (
	"github.com/taskflow/taskflow/extsvc/param"
	"github.com/taskflow/taskflow/internal/tasktypes"
)

// sleepFailKinds are the accepted values of sleep's "fail" param.
var sleepFailKinds = []string{"transient", "permanent", "timeout", "panic", "cancel"}

// Types declares the built-in types (their descriptions and params), so
// the API refuses bad params at submit (422 naming params.<field>) instead
// of creating a task that can only fail. ParseSleepParams applies the same
// rules when the task runs. noop ignores its params (any object, e.g. a
// payload for a benchmark).
func Types() []tasktypes.Type {
	return []tasktypes.Type{
		{Name: TypeNoop, Description: "Does nothing and completes: a probe of the queue (tests, benchmarks).",
			Params: param.Schema{AllowUnknown: true}},
		{Name: TypeSleep, Description: "Sleeps duration_ms, then completes or fails as fail says: a stand-in for slow work.",
			Params: param.Schema{Fields: []param.Field{
				{Name: "duration_ms", Kind: param.Integer, Min: 0, Max: maxSleepMS, Description: "how long to sleep, 0..86400000 ms"},
				{Name: "fail", Kind: param.String, Enum: sleepFailKinds, Description: "fail after sleeping: transient (retried), permanent (to the DLQ), timeout, panic or cancel"},
			}}},
	}
}
