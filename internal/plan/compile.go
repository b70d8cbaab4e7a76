package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/taskflow/taskflow/internal/plan/batch"
	"github.com/taskflow/taskflow/internal/plan/ir"
	"github.com/taskflow/taskflow/internal/plan/registry"
)

// execFn runs one node on its inputs (inputs first, then node-ref params).
type execFn func(ctx context.Context, nr *nodeRun, in []batch.RowSet) (batch.RowSet, error)

// builder checks a node's params beyond their types and returns its exec.
type builder func(cc *compileCtx, n *Node) (execFn, error)

// Node is a validated node, ready to run.
type Node struct {
	ID     string
	Index  int
	Op     *OpSpec
	Trace  string
	Params parsedParams
	// Deps are the nodes whose results this node reads, in order: its
	// inputs, then node-reference params (concat's rhs).
	Deps []int
	// Succ are the nodes that read this node's result.
	Succ []int
	exec execFn
	// step is set for IO nodes whose Redis commands can share a pipeline
	// with other nodes' (see run.runGroup); exec runs it alone.
	step stepFn
	// inOff is where the node's inputs start in a run's input slots.
	inOff int
}

// Compiled is a validated plan: nodes in topological order, compiled
// expressions and predicates, resolved endpoints. It is immutable and
// may be run by many goroutines at once.
type Compiled struct {
	Name    string
	Nodes   []*Node
	Outputs []int
	// Sources are the nodes with no dependencies.
	Sources []int
	// Endpoints are the endpoint ids the plan's IO nodes use.
	Endpoints []string
	order     []int // topological order
	deps      int   // total dependencies of all nodes (a run's input slots)
}

type compileCtx struct {
	reg   *registry.Registry
	plan  *Plan
	exprs map[string]*ir.Program
	preds map[string]*ir.Program
	eps   map[string]bool
	// outputs are the indexes of the plan's output nodes.
	outputs map[int]bool
	nodes   []*Node
}

// columnsDead says that no column of n's output can reach a plan output
// or an expression, predicate or sort: n is not an output and every node
// reading it makes new rows of its own (NewRows). Such a node need not
// read columns from Redis (follow's country hydration): the answer is the
// same with one dependent round trip fewer.
func (cc *compileCtx) columnsDead(n *Node) bool {
	if cc.outputs[n.Index] || len(n.Succ) == 0 {
		return false
	}
	for _, s := range n.Succ {
		if !cc.nodes[s].Op.NewRows {
			return false
		}
	}
	return true
}

// planError formats a validation error the way rankd prints it.
func planError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrPlan, fmt.Sprintf(format, args...))
}

// Load reads and compiles a plan file.
func Load(path string, reg *registry.Registry, cat Catalog) (*Compiled, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	p, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	return Compile(p, reg, cat)
}

// Compile validates p against the registries and the op catalog.
func Compile(p *Plan, reg *registry.Registry, cat Catalog) (*Compiled, error) {
	if !reg.Validation.ValidPlanName(p.Name) {
		return nil, planError("invalid plan_name '%s' (letters, digits and _ only)", p.Name)
	}
	if err := checkCapabilities(p, reg); err != nil {
		return nil, err
	}
	cc := &compileCtx{reg: reg, plan: p, exprs: map[string]*ir.Program{}, preds: map[string]*ir.Program{}, eps: map[string]bool{}}
	for _, id := range sortedKeys(p.ExprTable) {
		path := "expr_table." + id
		e, err := ir.ParseExpr(p.ExprTable[id], path)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPlan, err)
		}
		prog, err := ir.CompileExpr(e, reg, path)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPlan, err)
		}
		cc.exprs[id] = prog
	}
	for _, id := range sortedKeys(p.PredTable) {
		path := "pred_table." + id
		pr, err := ir.ParsePred(p.PredTable[id], path)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPlan, err)
		}
		prog, err := ir.CompilePred(pr, reg, path)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPlan, err)
		}
		cc.preds[id] = prog
	}

	index := map[string]int{}
	nodes := make([]*Node, len(p.Nodes))
	for i, ns := range p.Nodes {
		if !reg.Validation.ValidNodeID(ns.ID) {
			return nil, planError("invalid node_id '%s' (letters, digits and _ only)", ns.ID)
		}
		if _, dup := index[ns.ID]; dup {
			return nil, planError("Duplicate node_id: %s", ns.ID)
		}
		index[ns.ID] = i
	}
	for i, ns := range p.Nodes {
		for _, in := range ns.Inputs {
			if _, ok := index[in]; !ok {
				return nil, planError("Node '%s' references missing input: %s", ns.ID, in)
			}
		}
		op, bare := cat.Lookup(ns.Op)
		if op == nil {
			return nil, planError("Node '%s': unknown op '%s'", ns.ID, ns.Op)
		}
		for cap := range ns.Extensions {
			if !contains(p.CapabilitiesRequired, cap) {
				return nil, planError("Node '%s': extension '%s' is not in capabilities_required", ns.ID, cap)
			}
			if err := reg.Capabilities[cap].ValidatePayload(ns.Extensions[cap]); err != nil {
				return nil, planError("Node '%s': %v", ns.ID, err)
			}
		}
		params, err := checkParams(op, ns.Params, bare, int64(reg.Validation.Limits.MaxFanout))
		if err != nil {
			return nil, planError("Node '%s': Invalid params for op '%s': %v", ns.ID, op.Name, err)
		}
		if len(ns.Inputs) != op.Inputs {
			return nil, planError("Node '%s': op '%s' takes %d input(s), got %d", ns.ID, op.Name, op.Inputs, len(ns.Inputs))
		}
		n := &Node{ID: ns.ID, Index: i, Op: op, Params: params, Trace: params.str("trace")}
		for _, in := range ns.Inputs {
			n.Deps = append(n.Deps, index[in])
		}
		for _, ps := range op.Params {
			if ps.Type != PNodeRef {
				continue
			}
			ref := params.str(ps.Name)
			j, ok := index[ref]
			if !ok {
				return nil, planError("Node '%s': Invalid params for op '%s': field '%s' references missing node: %s", ns.ID, op.Name, ps.Name, ref)
			}
			n.Deps = append(n.Deps, j)
		}
		nodes[i] = n
	}
	for _, n := range nodes {
		for _, d := range n.Deps {
			nodes[d].Succ = append(nodes[d].Succ, n.Index)
		}
	}
	order, ok := topoOrder(nodes)
	if !ok {
		return nil, planError("Plan contains a cycle")
	}
	cc.nodes, cc.outputs = nodes, map[int]bool{}
	for _, o := range p.Outputs {
		if j, ok := index[o]; ok {
			cc.outputs[j] = true
		}
	}
	for _, n := range nodes {
		exec, err := n.Op.build(cc, n)
		if err != nil {
			return nil, planError("Node '%s': Invalid params for op '%s': %v", n.ID, n.Op.Name, err)
		}
		n.exec = exec
	}
	c := &Compiled{Name: p.Name, Nodes: nodes, order: order}
	for _, n := range nodes {
		n.inOff = c.deps
		c.deps += len(n.Deps)
	}
	for _, o := range p.Outputs {
		j, ok := index[o]
		if !ok {
			return nil, planError("Output references missing node: %s", o)
		}
		c.Outputs = append(c.Outputs, j)
	}
	for _, n := range nodes {
		if len(n.Deps) == 0 {
			c.Sources = append(c.Sources, n.Index)
		}
	}
	for ep := range cc.eps {
		c.Endpoints = append(c.Endpoints, ep)
	}
	sort.Strings(c.Endpoints)
	return c, nil
}

func checkCapabilities(p *Plan, reg *registry.Registry) error {
	caps := p.CapabilitiesRequired
	for i := 1; i < len(caps); i++ {
		if caps[i-1] >= caps[i] {
			return planError("capabilities_required must be sorted and unique")
		}
	}
	for _, c := range caps {
		rc := reg.Capabilities[c]
		if rc == nil || !rc.Supported() {
			return planError("unsupported capability: %s", c)
		}
	}
	for _, ext := range sortedKeys(p.Extensions) {
		if !contains(caps, ext) {
			return planError("extension '%s' is not in capabilities_required", ext)
		}
		if err := reg.Capabilities[ext].ValidatePayload(p.Extensions[ext]); err != nil {
			return planError("extensions: %v", err)
		}
	}
	return nil
}

// topoOrder orders nodes so that every node follows its dependencies; ok
// is false when the graph has a cycle.
func topoOrder(nodes []*Node) (order []int, ok bool) {
	pending := make([]int, len(nodes))
	var ready []int
	for i, n := range nodes {
		pending[i] = len(n.Deps)
		if pending[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		i := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		order = append(order, i)
		for _, s := range nodes[i].Succ {
			pending[s]--
			if pending[s] == 0 {
				ready = append(ready, s)
			}
		}
	}
	return order, len(order) == len(nodes)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// endpoint resolves an endpoint_ref param.
func (cc *compileCtx) endpoint(n *Node, kind string) (string, error) {
	id := n.Params.str("endpoint")
	ep := cc.reg.Endpoints[id]
	if ep == nil {
		// a plan in the prose form names it (EP.redis.redis_default): accept the name too.
		for _, e := range cc.reg.Endpoints {
			if e.Name == id {
				ep = e
			}
		}
	}
	if ep == nil {
		return "", fmt.Errorf("unknown endpoint '%s'", id)
	}
	if ep.Kind != kind {
		return "", fmt.Errorf("endpoint '%s' is a %s endpoint, want %s", id, ep.Kind, kind)
	}
	cc.eps[ep.ID] = true
	return ep.ID, nil
}
