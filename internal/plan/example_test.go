package plan_test

import (
	"context"
	"fmt"

	"github.com/taskflow/taskflow/internal/plan"
)

// A plan that needs no Redis: three rows, a score of id × weight (the
// request's P.weight, 0.5 when unset), sorted by score, best two kept.
func ExampleEngine_Run() {
	eng, err := plan.New(plan.Config{})
	if err != nil {
		panic(err)
	}
	defer eng.Close()
	p, err := plan.Parse([]byte(`{
	  "schema_version": 1, "plan_name": "example",
	  "nodes": [
	    {"node_id": "src",   "op": "fixed_source", "inputs": [],        "params": {"row_count": 3}},
	    {"node_id": "score", "op": "vm",           "inputs": ["src"],   "params": {"expr_id": "s", "out_key": 2002}},
	    {"node_id": "best",  "op": "sort",         "inputs": ["score"], "params": {"key": 2002, "order": "desc"}},
	    {"node_id": "top",   "op": "take",         "inputs": ["best"],  "params": {"count": 2}}
	  ],
	  "outputs": ["top"],
	  "expr_table": {"s": {"op": "mul", "a": {"op": "key_ref", "key_id": 1},
	                       "b": {"op": "coalesce", "a": {"op": "param_ref", "param_id": 4}, "b": {"op": "const_number", "value": 0.5}}}}
	}`), "example.plan.json")
	if err != nil {
		panic(err)
	}
	c, err := eng.Compile(p)
	if err != nil {
		panic(err)
	}
	res, err := eng.Run(context.Background(), c, &plan.Request{UserID: 1}, plan.RunOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(plan.AppendCandidates(nil, res.Outputs, eng.Registry())))
	// Output: [{"id":3,"fields":{"score":1.5}},{"id":2,"fields":{"score":1.0}}]
}
