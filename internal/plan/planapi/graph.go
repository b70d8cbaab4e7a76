package planapi

import (
	"os"
	"slices"

	builtin "github.com/taskflow/taskflow/plans"

	"github.com/taskflow/taskflow/internal/plan"
)

// Names lists the plans s can run, sorted: the plans built into the
// binary, or the <name>.plan.json files of PlanDir. A file whose name
// CheckName refuses is left out: no request could name it, so offering it
// would only lead to a 400.
func (s *Service) Names() ([]string, error) {
	fsys := builtin.FS()
	if s.cfg.PlanDir != "" {
		fsys = os.DirFS(s.cfg.PlanDir)
	}
	names, err := builtin.Names(fsys)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if s.CheckName(n) == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// Graph is a plan's DAG as a client draws it: every node with the ids of
// the nodes it reads, in an order where each node follows those it reads.
type Graph struct {
	// Name is the name the plan is run by (its file's name).
	Name  string      `json:"name"`
	Nodes []GraphNode `json:"nodes" jsonschema:"each node after the nodes it reads (ties in the plan file's order)"`
	// Outputs are the nodes whose rows are the answer, in the answer's order.
	Outputs []string `json:"outputs" jsonschema:"node ids: the nodes whose rows are the answer, in its order"`
	// Endpoints are the data stores the plan's IO nodes read.
	Endpoints []string `json:"endpoints" jsonschema:"endpoint ids the IO nodes read (registry/endpoints.*.toml)"`
}

// GraphNode is one node of a Graph.
type GraphNode struct {
	ID string `json:"id" jsonschema:"the node's id"`
	// Op is the op's full name (core::viewer).
	Op string `json:"op" jsonschema:"the op, e.g. core::viewer"`
	// Kind is "IO" or "CPU", as a run's trace says it.
	Kind string `json:"kind" openapi:"enum=IO|CPU" jsonschema:"IO: reads Redis or waits; CPU: computes"`
	// Deps are the nodes it reads: its inputs, then node-reference params
	// (concat's rhs).
	Deps []string `json:"deps" jsonschema:"node ids: the nodes it reads, inputs first, then node references (concat's rhs)"`
	// Output is whether the node is one of the plan's outputs.
	Output bool `json:"output" jsonschema:"one of the plan's outputs"`
}

// Graph returns the DAG of plan name, compiled as a run would compile it,
// so that a plan that cannot run is an error here too (the same errors as
// Plan's).
func (s *Service) Graph(name string) (*Graph, error) {
	c, err := s.Plan(name)
	if err != nil {
		return nil, err
	}
	g := &Graph{Name: name, Nodes: make([]GraphNode, 0, len(c.Nodes)),
		Outputs: make([]string, 0, len(c.Outputs)), Endpoints: append([]string{}, c.Endpoints...)}
	output := make([]bool, len(c.Nodes))
	for _, o := range c.Outputs {
		output[o] = true
		g.Outputs = append(g.Outputs, c.Nodes[o].ID)
	}
	for _, i := range topological(c.Nodes) {
		n := c.Nodes[i]
		deps := make([]string, 0, len(n.Deps))
		for _, d := range n.Deps {
			deps = append(deps, c.Nodes[d].ID)
		}
		g.Nodes = append(g.Nodes, GraphNode{ID: n.ID, Op: n.Op.Name, Kind: n.Op.Kind.String(), Deps: deps, Output: output[i]})
	}
	return g, nil
}

// topological orders nodes (by index) so that each follows the nodes it
// reads, taking the earliest in the file whenever several are ready: a
// file written in order (as the DSL writes them) keeps its order. The
// compiler keeps the file's order in Compiled.Nodes, which a hand-written
// plan need not have written dependencies first.
func topological(nodes []*plan.Node) []int {
	pending := make([]int, len(nodes))
	var ready []int
	for i, n := range nodes {
		if pending[i] = len(n.Deps); pending[i] == 0 {
			ready = append(ready, i)
		}
	}
	order := make([]int, 0, len(nodes))
	for len(ready) > 0 {
		i := ready[0]
		ready = ready[1:]
		order = append(order, i)
		for _, s := range nodes[i].Succ {
			if pending[s]--; pending[s] == 0 {
				at, _ := slices.BinarySearch(ready, s)
				ready = slices.Insert(ready, at, s)
			}
		}
	}
	return order
}
