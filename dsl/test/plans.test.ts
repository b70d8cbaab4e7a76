// plans/ holds spec 002's six examples; the committed JSON is what the
// sources compile to (make plans-check says the same for CI).
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { compileFile } from "../src/compiler/compile.js";

const plansDir = resolve(import.meta.dirname, "..", "..", "plans");
const sources = readdirSync(plansDir).filter((f) => f.endsWith(".plan.ts")).sort();

describe("plans/", () => {
  it("HoldsTheSixExamples", () => {
    expect(sources).toEqual([
      "complex_dag.plan.ts",
      "diamond.plan.ts",
      "mixed_pipeline.plan.ts",
      "parallel_fanout.plan.ts",
      "simple_viewer.plan.ts",
      "viewer_filter.plan.ts",
    ]);
  });

  for (const f of sources) {
    it(`CommittedJsonIsCurrent_${f}`, () => {
      const c = compileFile(join(plansDir, f));
      expect(`${c.name}.plan.ts`).toBe(f);
      expect(readFileSync(join(plansDir, `${c.name}.plan.json`), "utf8")).toBe(c.json);
    });
  }

  it("EveryJsonHasItsSource", () => {
    // A deleted .plan.ts must not leave a stale plan behind for the engine.
    const json = readdirSync(plansDir).filter((f) => f.endsWith(".plan.json")).sort();
    expect(json).toEqual(sources.map((f) => f.replace(/\.plan\.ts$/, ".plan.json")));
  });

  it("ShapesFollowTheSpec", () => {
    const ops = (name: string) => {
      const p = JSON.parse(readFileSync(join(plansDir, `${name}.plan.json`), "utf8"));
      return { ops: p.nodes.map((n: any) => `${n.node_id}:${n.op.split("::")[1]}(${n.inputs.join(",")})`), outputs: p.outputs };
    };
    expect(ops("simple_viewer")).toEqual({ ops: ["n0:viewer()"], outputs: ["n0"] });
    expect(ops("viewer_filter")).toEqual({ ops: ["n0:viewer()", "n1:filter(n0)"], outputs: ["n1"] });
    expect(ops("parallel_fanout")).toEqual({ ops: ["n0:viewer()", "n1:follow(n0)", "n2:recommendation(n0)"], outputs: ["n1", "n2"] });
    expect(ops("mixed_pipeline").ops).toEqual(["n0:viewer()", "n1:follow(n0)", "n2:vm(n1)", "n3:filter(n2)", "n4:sort(n3)", "n5:take(n4)"]);
    expect(ops("diamond")).toEqual({ ops: ["n0:viewer()", "n1:follow(n0)", "n2:recommendation(n0)", "n3:concat(n1)"], outputs: ["n3"] });
    expect(ops("complex_dag").ops).toEqual([
      "n0:viewer()",
      "n1:follow(n0)",
      "n2:media(n1)",
      "n3:vm(n2)",
      "n4:recommendation(n0)",
      "n5:media(n4)",
      "n6:vm(n5)",
      "n7:concat(n3)",
      "n8:sort(n7)",
      "n9:take(n8)",
    ]);
  });
});
