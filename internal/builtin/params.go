package builtin

import "github.com/taskflow/taskflow/extsvc/param"

// sleepFailKinds are the accepted values of sleep's "fail" param.
var sleepFailKinds = []string{"transient", "permanent", "timeout", "panic", "cancel"}

// ParamSchemas declares the params of the built-in types, so the API
// refuses bad ones at submit (422 naming params.<field>) instead of
// creating a task that can only fail. ParseSleepParams applies the same
// rules when the task runs. noop ignores its params (any object, e.g. a
// payload for a benchmark).
var ParamSchemas = map[string]param.Schema{
	TypeNoop: {AllowUnknown: true},
	TypeSleep: {Fields: []param.Field{
		{Name: "duration_ms", Kind: param.Integer, Min: 0, Max: maxSleepMS, Description: "how long to sleep, 0..86400000 ms"},
		{Name: "fail", Kind: param.String, Enum: sleepFailKinds, Description: "fail after sleeping: transient (retried), permanent (to the DLQ), timeout, panic or cancel"},
	}},
}

// ParamSchema returns the declared params of a built-in task type.
func ParamSchema(taskType string) (param.Schema, bool) {
	s, ok := ParamSchemas[taskType]
	return s, ok
}
