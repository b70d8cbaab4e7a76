// The host checks the sandbox's answer itself (src/compiler/check.ts): every
// node's params against the engine's catalog (OPS) and the registry, the
// tables against the IR grammar. These plans are forged here, as a plan that
// fooled the sandbox could forge them.
import { describe, expect, it } from "vitest";
import { checkPlan } from "../src/compiler/check.js";
import { compileSource } from "../src/compiler/compile.js";
import { FILE, at, plan, planWith } from "./helpers.js";

const EPR = "endpoint: EP.redis.redis_default";
// One plan with every op, every param and both tables.
const full = planWith(`{
    const v = ctx.viewer({ ${EPR} });
    const f = v.follow({ ${EPR}, fanout: 5 }).media({ ${EPR} }).vm({ outKey: Key.score, expr: Key.id * coalesce(P.weight, 0.5) - -1 });
    const r = v.recommendation({ ${EPR}, trace: "r" }).filter({ pred: Pred.in(Key.country, ["US"]) || Pred.regex(Key.title, P.blocklist_regex, "i") });
    const t = ctx.fixedSource({ rowCount: 3 }).sleep({ durationMs: 1, failAfterSleep: true }).busyCpu({ busyWaitMs: 1 })
      .filter({ pred: !(Key.id > 1) && Pred.isNull(Key.country) && Pred.in(Key.id, [1, 2]) && Pred.regex(Key.title, "^a") && Key.country != null });
    return [f.concat({ rhs: r }).sort({ key: Key.score, order: "desc" }).take({ count: 3 }), t];
  }`);

function base(): any {
  const { built_by: _, ...p } = plan(full);
  return JSON.parse(JSON.stringify(p));
}

const node = (p: any, op: string) => p.nodes.find((n: any) => n.op === op);

describe("host check of the sandbox's plan", () => {
  it("AcceptsWhatTheRuntimeMakes", () => {
    const p = base();
    expect(p.nodes.map((n: any) => n.op)).toEqual([
      "core::viewer", "core::follow", "core::media", "core::vm", "core::recommendation", "core::filter", "test::fixed_source",
      "test::sleep", "test::busy_cpu", "core::filter", "core::concat", "core::sort", "core::take",
    ]);
    expect(checkPlan(p)).toBeUndefined();
  });

  // [name, forge the plan, the problem reported]
  const cases: [string, (p: any) => void, string][] = [
    ["TheAuditsForgedFollow", (p) => {
      p.nodes = [{ node_id: "n0", op: "core::follow", inputs: [], params: { fanout: 0 } }];
      p.outputs = ["n0"];
      delete p.expr_table;
      delete p.pred_table;
    }, "n0: core::follow reads 1 input node(s), not 0"],
    ["FanoutZero", (p) => (node(p, "core::follow").params.fanout = 0), "n1: core::follow param fanout must be an integer in 1..10000000, got 0"],
    ["MediaFanoutAboveItsBound", (p) => (node(p, "core::media").params.fanout = 10001), "n2: core::media param fanout must be an integer in 1..10000, got 10001"],
    ["CountFraction", (p) => (node(p, "core::take").params.count = 1.5), "n12: core::take param count must be an integer in 1..2147483647, got 1.5"],
    ["CountAsString", (p) => (node(p, "core::take").params.count = "3"), 'n12: core::take param count must be an integer in 1..2147483647, got "3"'],
    ["MissingEndpoint", (p) => delete node(p, "core::follow").params.endpoint, "n1: core::follow param endpoint is required"],
    ["UnknownEndpoint", (p) => (node(p, "core::viewer").params.endpoint = "ep_9999"), 'n0: core::viewer param endpoint: "ep_9999" is not a registry endpoint'],
    ["HttpEndpoint", (p) => (node(p, "core::viewer").params.endpoint = "ep_0002"), "n0: core::viewer param endpoint: ep_0002 is not a redis endpoint"],
    ["UnknownParam", (p) => (node(p, "core::take").params.limit = 1), "n12: core::take has no param limit"],
    ["NullNotNullable", (p) => (node(p, "core::sort").params.order = null), "n11: core::sort param order may not be null"],
    ["OrderOutsideTheEnum", (p) => (node(p, "core::sort").params.order = "up"), "n11: core::sort param order must be one of asc, desc"],
    ["SortByABundle", (p) => (node(p, "core::sort").params.by = 4001), "n11: core::sort param by: 4001 is not a key this param may name"],
    ["OutKeyReadOnly", (p) => (node(p, "core::vm").params.out_key = 1), "n3: core::vm param out_key: 1 is not a key this param may name"],
    ["OutKeyUnknown", (p) => (node(p, "core::vm").params.out_key = 777), "n3: core::vm param out_key: 777 is not a key this param may name"],
    ["BoolAsNumber", (p) => (node(p, "test::sleep").params.fail_after_sleep = 1), "n7: test::sleep param fail_after_sleep must be a boolean"],
    ["TraceNotAString", (p) => (node(p, "core::viewer").params.trace = 5), "n0: core::viewer param trace must be a string"],
    ["RhsLaterNode", (p) => (node(p, "core::concat").params.rhs = "n12"), "n10: core::concat param rhs must name an earlier node"],
    ["UnknownOp", (p) => (node(p, "core::take").op = "core::drop"), 'n12: unknown op "core::drop"'],
    ["SparseIds", (p) => (p.nodes[1].node_id = "n7"), "node 1: node_id must be n1"],
    ["ExtraNodeField", (p) => (p.nodes[0].x = 1), "n0: unexpected field x"],
    ["InputOfALaterNode", (p) => (p.nodes[1].inputs = ["n5"]), "n1: inputs must name earlier nodes"],
    ["UnreachableNode", (p) => {
      p.nodes.push({ node_id: "n13", op: "core::viewer", inputs: [], params: { endpoint: "ep_0001", trace: null } });
    }, "n13 is not reachable from the outputs"],
    ["DuplicateOutputs", (p) => (p.outputs = ["n12", "n12"]), "outputs must name distinct nodes"],
    ["UnusedTableEntry", (p) => (p.expr_table.e9 = { op: "const_null" }), "expr_table entry e9 is not used"],
    ["MissingTableEntry", (p) => (node(p, "core::vm").params.expr_id = "e5"), "n3: core::vm param expr_id must name an expr_table entry"],
    ["ExprUnknownKey", (p) => (p.expr_table.e0.a = { op: "key_ref", key_id: 999 }), "expr_table.e0.a: key_id must name an int or float key"],
    ["ExprStringKey", (p) => (p.expr_table.e0.a = { op: "key_ref", key_id: 3001 }), "expr_table.e0.a: key_id must name an int or float key"],
    ["ExprStringParam", (p) => (p.expr_table.e0.a = { op: "param_ref", param_id: 2 }), "expr_table.e0.a: param_id must name an int or float param"],
    ["ExprDivision", (p) => (p.expr_table.e0.op = "div"), 'expr_table.e0: unknown expression op "div"'],
    ["ExprExtraField", (p) => (p.expr_table.e0.c = 1), "expr_table.e0: unexpected field c"],
    ["ExprNotFinite", (p) => (p.expr_table.e0.b = { op: "const_number", value: "1" }), "expr_table.e0.b: value must be a finite number"],
    ["PredUnknownCmp", (p) => (p.pred_table.p1.a.a.a.a.x.cmp = "=>"), 'pred_table.p1.a.a.a.a.x: unknown comparison "=>"'],
    ["PredInMixedList", (p) => (p.pred_table.p0.a.list = ["US", 1]), "pred_table.p0.a: list must hold only finite numbers or only strings"],
    ["PredInStringsOnANumber", (p) => (p.pred_table.p0.a.lhs = { op: "key_ref", key_id: 1 }), "pred_table.p0.a: a list of strings needs a string key"],
    ["PredRegexBad", (p) => (p.pred_table.p1.a.b.pattern.value = "("), "pred_table.p1.a.b: pattern must be a valid regular expression"],
    ["PredRegexFlags", (p) => (p.pred_table.p0.b.flags = "g"), 'pred_table.p0.b: flags must be "" or "i"'],
    ["PredRegexNumberParam", (p) => (p.pred_table.p0.b.pattern.param_id = 4), "pred_table.p0.b: pattern param_id must name a string param"],
    ["PredUnknownOp", (p) => (p.pred_table.p0.op = "xor"), 'pred_table.p0: unknown predicate op "xor"'],
    ["MissingNodeField", (p) => delete p.nodes[0].params, "n0: missing field params"],
    ["ParamsNotAnObject", (p) => (p.nodes[0].params = []), "n0: params must be an object"],
    ["UnusedPredEntry", (p) => (p.pred_table.p9 = { op: "const_bool", value: true }), "pred_table entry p9 is not used"],
    ["EmptyTable", (p) => (p.pred_table = {}), "pred_table must be an object with entries (absent when empty)"],
    ["BadTableId", (p) => (p.expr_table.x1 = p.expr_table.e0), "expr_table: bad id x1"],
    ["MissingPredEntry", (p) => (node(p, "core::filter").params.pred_id = "p7"), "n5: core::filter param pred_id must name a pred_table entry"],
    ["ExprNotAnObject", (p) => (p.expr_table.e0.a = 5), "expr_table.e0.a: not an expression"],
    ["PredNotAnObject", (p) => (p.pred_table.p0.a = "x"), "pred_table.p0.a: not a predicate"],
    ["PredConstNotABoolean", (p) => (p.pred_table.p0.a = { op: "const_bool", value: 1 }), "pred_table.p0.a: value must be a boolean"],
    ["PredInEmptyList", (p) => (p.pred_table.p0.a.list = []), "pred_table.p0.a: list must be a non-empty array"],
    ["PredRegexNumberKey", (p) => (p.pred_table.p0.b.key_id = 1), "pred_table.p0.b: key_id must name a string key"],
    ["PredRegexPatternKind", (p) => (p.pred_table.p0.b.pattern = { kind: "glob", value: "*" }), 'pred_table.p0.b: pattern must be {kind: "literal"} or {kind: "param"}'],
    ["UnexpectedTopField", (p) => (p.extra = 1), "unexpected field extra"],
    ["PlanName", (p) => (p.plan_name = "a-b"), "plan_name"],
    ["SchemaVersion", (p) => (p.schema_version = 2), "schema_version"],
    ["NoNodes", (p) => (p.nodes = []), "nodes"],
  ];
  for (const [name, forge, problem] of cases) {
    it(name, () => {
      const p = base();
      forge(p);
      expect(checkPlan(p)).toBe(problem);
    });
  }

  it("NotAnObject", () => {
    expect(checkPlan(null)).toBe("not an object");
    expect(checkPlan([1])).toBe("not an object");
  });

  it("DeepNestingIsAProblemNotACrash", () => {
    const p = base();
    let e: any = { op: "const_null" };
    for (let i = 0; i < 200_000; i++) e = { op: "neg", x: e };
    p.expr_table.e0 = e;
    expect(checkPlan(p)).toBe("nested too deeply");
  });

  it("MalformedOutputIsACompileErrorAtTheDefinition", () => {
    // compileSource with the sandbox replaced by one that returns the audit's
    // forged follow: the host refuses it, at the definePlan call.
    const src = planWith(`ctx.viewer({ ${EPR} })`);
    const forged = { schema_version: 1, plan_name: "t", nodes: [{ node_id: "n0", op: "core::follow", inputs: [], params: { fanout: 0 } }], outputs: ["n0"] };
    let caught: any;
    try {
      compileSource(FILE, src, { run: () => ({ ok: true, plan: forged }) });
    } catch (e) {
      caught = e;
    }
    expect(caught?.diagnostics?.map((d: any) => `${d.file}:${d.line}:${d.column} ${d.message}`)).toEqual([
      `${FILE}:${at(src, "definePlan(")} the plan's output is malformed: n0: core::follow reads 1 input node(s), not 0`,
    ]);
  });
});
