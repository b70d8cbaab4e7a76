// Every operator of the DSL: the node, params and ids it compiles to.
import { describe, expect, it } from "vitest";
import { plan, planWith } from "./helpers.js";

const EPR = "endpoint: EP.redis.redis_default";
const viewer = `ctx.viewer({ ${EPR} })`;

function single(body: string): any {
  const p = plan(planWith(body));
  return p.nodes[p.nodes.length - 1];
}

describe("ops", () => {
  it("Viewer", () => {
    const p = plan(planWith(viewer));
    expect(p).toMatchObject({
      schema_version: 1,
      plan_name: "t",
      nodes: [{ node_id: "n0", op: "core::viewer", inputs: [], params: { endpoint: "ep_0001", trace: null } }],
      outputs: ["n0"],
    });
    expect(p.expr_table).toBeUndefined();
    expect(p.pred_table).toBeUndefined();
    expect(p.built_by).toEqual({ backend: "node-vm", tool: "dslc", tool_version: "0.1.0" });
  });

  it("SourcesWithDefaultAndExplicitFanout", () => {
    for (const op of ["follow", "recommendation", "media"]) {
      expect(single(`${viewer}.${op}({ ${EPR} })`)).toEqual({
        node_id: "n1",
        op: `core::${op}`,
        inputs: ["n0"],
        params: { endpoint: "ep_0001", fanout: 100, trace: null },
      });
      expect(single(`${viewer}.${op}({ ${EPR}, fanout: 7, trace: "src" })`).params).toEqual({
        endpoint: "ep_0001",
        fanout: 7,
        trace: "src",
      });
    }
  });

  it("Vm", () => {
    const p = plan(planWith(`${viewer}.vm({ outKey: Key.final_score, expr: E.key(Key.id), trace: "v" })`));
    expect(p.nodes[1]).toEqual({ node_id: "n1", op: "core::vm", inputs: ["n0"], params: { expr_id: "e0", out_key: 2001, trace: "v" } });
    expect(p.expr_table).toEqual({ e0: { op: "key_ref", key_id: 1 } });
  });

  it("Filter", () => {
    const p = plan(planWith(`${viewer}.filter({ pred: Pred.notNull(Key.country) })`));
    expect(p.nodes[1]).toEqual({ node_id: "n1", op: "core::filter", inputs: ["n0"], params: { pred_id: "p0", trace: null } });
    expect(p.pred_table).toEqual({ p0: { op: "not_null", x: { op: "key_ref", key_id: 3001 } } });
  });

  it("SortByKeyOrBy", () => {
    expect(single(`${viewer}.sort({ key: Key.score, order: "desc" })`).params).toEqual({ by: 2002, order: "desc", trace: null });
    expect(single(`${viewer}.sort({ by: Key.country })`).params).toEqual({ by: 3001, order: "asc", trace: null });
  });

  it("Take", () => {
    expect(single(`${viewer}.take({ count: 3 })`)).toEqual({ node_id: "n1", op: "core::take", inputs: ["n0"], params: { count: 3, trace: null } });
  });

  it("ConcatReferencesRhs", () => {
    const p = plan(
      planWith(`{ const v = ${viewer}; const a = v.follow({ ${EPR} }); const b = v.recommendation({ ${EPR} }); return a.concat({ rhs: b, trace: "c" }); }`),
    );
    expect(p.nodes.map((n: any) => n.op)).toEqual(["core::viewer", "core::follow", "core::recommendation", "core::concat"]);
    expect(p.nodes[3]).toEqual({ node_id: "n3", op: "core::concat", inputs: ["n1"], params: { rhs: "n2", trace: "c" } });
    expect(p.outputs).toEqual(["n3"]);
  });

  it("TestOps", () => {
    const p = plan(
      planWith(`ctx.fixedSource({ rowCount: 4 }).sleep({ durationMs: 5 }).sleep({ durationMs: 1, failAfterSleep: true }).busyCpu({ busyWaitMs: 2 })`),
    );
    expect(p.nodes).toEqual([
      { node_id: "n0", op: "test::fixed_source", inputs: [], params: { row_count: 4, trace: null } },
      { node_id: "n1", op: "test::sleep", inputs: ["n0"], params: { duration_ms: 5, fail_after_sleep: false, trace: null } },
      { node_id: "n2", op: "test::sleep", inputs: ["n1"], params: { duration_ms: 1, fail_after_sleep: true, trace: null } },
      { node_id: "n3", op: "test::busy_cpu", inputs: ["n2"], params: { busy_wait_ms: 2, trace: null } },
    ]);
    expect(single(`ctx.fixedSource()`).params).toEqual({ row_count: 1, trace: null });
  });

  it("SeveralOutputsInOrder", () => {
    const p = plan(planWith(`{ const v = ${viewer}; return [v.take({ count: 1 }), v.take({ count: 2 }), v]; }`));
    expect(p.outputs).toEqual(["n1", "n2", "n0"]);
  });

  it("UnreachableNodesAreLeftOutAndIdsStayDense", () => {
    const p = plan(planWith(`{ const v = ${viewer}; v.take({ count: 9 }); return v.follow({ ${EPR} }).take({ count: 1 }); }`));
    expect(p.nodes.map((n: any) => [n.node_id, n.op])).toEqual([
      ["n0", "core::viewer"],
      ["n1", "core::follow"],
      ["n2", "core::take"],
    ]);
  });

  it("EqualExpressionsShareOneId", () => {
    const p = plan(
      planWith(
        `${viewer}.vm({ outKey: Key.score, expr: Key.id * 2 }).vm({ outKey: Key.final_score, expr: Key.score + 1 }).vm({ outKey: Key.score, expr: Key.id * 2 }).filter({ pred: Key.id > 1 }).filter({ pred: Key.id > 1 })`,
      ),
    );
    expect(p.nodes.map((n: any) => n.params.expr_id ?? n.params.pred_id ?? null)).toEqual([null, "e0", "e1", "e0", "p0", "p0"]);
    expect(Object.keys(p.expr_table)).toEqual(["e0", "e1"]);
  });

  it("DeterministicText", async () => {
    const { compile } = await import("./helpers.js");
    const src = planWith(`${viewer}.follow({ ${EPR} }).vm({ outKey: Key.score, expr: Key.id * coalesce(P.weight, 0.5) }).sort({ key: Key.score })`);
    const a = compile(src).json;
    expect(compile(src).json).toBe(a);
    // Keys are sorted at every level and the text ends with a newline.
    expect(a.endsWith("}\n")).toBe(true);
    const keys = Object.keys(JSON.parse(a));
    expect(keys).toEqual([...keys].sort());
    expect(Object.keys(JSON.parse(a).nodes[0])).toEqual(["inputs", "node_id", "op", "params"]);
  });
});
