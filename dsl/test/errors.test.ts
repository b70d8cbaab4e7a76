// Errors found when the plan runs (bad option values, bad outputs) are
// reported at the line:column of the call in the .plan.ts source.
import { describe, expect, it } from "vitest";
import { compileSource } from "../src/compiler/compile.js";
import { readReply } from "../src/compiler/sandbox.js";
import { SourceMap } from "../src/compiler/sourcemap.js";
import { FILE, at, error, errors, plan, planWith } from "./helpers.js";

const EPR = "endpoint: EP.redis.redis_default";
const viewer = `ctx.viewer({ ${EPR} })`;

describe("run-time errors", () => {
  // [name, build body, message, the text the error points at (default: the last op's name)]
  const cases: [string, string, string, string?][] = [
    ["TakeCountZero", `${viewer}.take({ count: 0 })`, "take: count must be an integer in 1..2147483647, got 0"],
    ["TakeCountFraction", `${viewer}.take({ count: 1.5 })`, "take: count must be an integer in 1..2147483647, got 1.5"],
    ["FanoutTooLarge", `${viewer}.media({ ${EPR}, fanout: 10001 })`, "media: fanout must be an integer in 1..10000, got 10001"],
    ["FollowFanoutTooLarge", `${viewer}.follow({ ${EPR}, fanout: 10000001 })`, "follow: fanout must be an integer in 1..10000000, got 10000001"],
    ["UnknownOption", `${viewer}.take({ cont: 3 } as any)`, "take: unknown option 'cont' (allowed: count, trace)"],
    ["HttpEndpoint", `${viewer}.follow({ endpoint: EP.http.http_api } as any)`, "follow: endpoint EP.http.http_api is not a redis endpoint"],
    ["EndpointNotAToken", `ctx.viewer({ endpoint: "ep_0001" } as any)`, "viewer: endpoint must be an EP.* endpoint, e.g. EP.redis.redis_default"],
    ["OutKeyId", `${viewer}.vm({ outKey: Key.id as any, expr: 1 })`, "vm: outKey Key.id is not a writable float key"],
    ["OutKeyString", `${viewer}.vm({ outKey: Key.country as any, expr: 1 })`, "vm: outKey Key.country is not a writable float key"],
    ["SortOrder", `${viewer}.sort({ key: Key.id, order: "up" as any })`, 'sort: order must be "asc" or "desc", got "up"'],
    ["SortKeyAndBy", `${viewer}.sort({ key: Key.id, by: Key.score })`, "sort: give key or by, not both"],
    ["SortBundle", `${viewer}.sort({ key: Key.features_esr })`, "sort: Key.features_esr is a feature bundle; sort by an int, float or string key"],
    ["TraceType", `${viewer}.take({ count: 1, trace: 5 as any })`, "take: trace must be a string"],
    ["ConcatNotANode", `${viewer}.concat({ rhs: 5 as any })`, "concat: rhs must be a node of this plan"],
    ["SleepNegative", `${viewer}.sleep({ durationMs: -1 })`, "sleep: durationMs must be an integer in 0..2147483647, got -1"],
    // The engine's bound (registry/tasks.toml), not a wider one of the DSL's own.
    ["RowCountTooLarge", `ctx.fixedSource({ rowCount: 10000001 })`, "fixedSource: rowCount must be an integer in 0..10000000, got 10000001", "fixedSource"],
    ["RegexInvalid", `${viewer}.filter({ pred: Pred.regex(Key.title, "(") })`, 'Pred.regex: "(" is not a valid regular expression', "regex"],
    ["RegexNumberKey", `${viewer}.filter({ pred: Pred.regex(Key.id, "1") })`, "Pred.regex: Key.id is a int key; regex reads string keys", "regex"],
    ["InStringsOnNumberKey", `${viewer}.filter({ pred: Pred.in(Key.id, ["1"]) })`, "Pred.in: a list of strings needs a string key (e.g. Key.country)", "(Key"],
    ["NotAnOptionsObject", `${viewer}.take(5 as any)`, "take: expected an options object"],
    ["FilterWithoutPred", `${viewer}.filter({} as any)`, "filter: pred is required"],
    ["VmWithoutExpr", `${viewer}.vm({ outKey: Key.score } as any)`, "vm: expr is required"],
    ["VmOutKeyNotAKey", `${viewer}.vm({ outKey: 5 as any, expr: 1 })`, "vm: outKey must be a Key.*"],
    ["SortWithoutKey", `${viewer}.sort({} as any)`, "sort: key must be a Key.*"],
    ["SortKeyNotAKey", `${viewer}.sort({ key: "score" as any })`, "sort: key must be a Key.*"],
    ["SleepFailNotABoolean", `${viewer}.sleep({ durationMs: 1, failAfterSleep: 1 as any })`, "sleep: failAfterSleep must be a boolean"],
    ["InNumbersOnStringKey", `${viewer}.filter({ pred: Pred.in(Key.country, [1]) })`, "Pred.in: Key.country is a string key; the list must hold strings", "(Key"],
  ];
  for (const [name, body, message, needle] of cases) {
    it(name, () => {
      const src = planWith(body);
      const call = body.slice(body.lastIndexOf(").") + 2);
      const d = errors(src);
      expect(d).toHaveLength(1);
      expect(d[0]!.message).toBe(message);
      expect(d[0]!.file).toBe("/virtual/test.plan.ts");
      // The position is the failing call's, on the build line.
      expect(d[0]!.line).toBe(5);
      if (name !== "EndpointNotAToken") expect(`${d[0]!.line}:${d[0]!.column}`).toBe(at(src, needle ?? call.split("(")[0]!));
    });
  }

  it("MultiLinePositions", () => {
    const src = `import { definePlan } from "@ranking-dsl/runtime";

export default definePlan({
  name: "t",
  build: (ctx) => {
    const v = ctx.viewer({ endpoint: EP.redis.redis_default });
    const a = v.follow({ endpoint: EP.redis.redis_default });
    return a
      .sort({ key: Key.score })
      .take({ count: -4 });
  },
});
`;
    expect(error(src)).toBe(`${at(src, "take")} take: count must be an integer in 1..2147483647, got -4`);
  });

  it("BuildResults", () => {
    expect(error(planWith("[]"))).toBe(`3:16 build returned no nodes`);
    expect(error(planWith("undefined as any"))).toBe(`3:16 build must return nodes of its ctx (output 0 is undefined)`);
    expect(error(planWith("[ctx.viewer({ endpoint: EP.redis.redis_default }), 3] as any"))).toMatch(/output 1 is not a node of this plan/);
    let src = planWith(`{ const v = ${viewer}; return [v, v]; }`);
    expect(error(src)).toBe(`${at(src, "viewer")} build returned the same node twice (output 1)`);
    src = planWith(`(async () => ${viewer})() as any`);
    expect(error(src)).toMatch(/build returned a Promise: build must return its nodes synchronously/);
  });

  it("NodeOfAnotherPlan", () => {
    const src = `import { definePlan, PlanCtx } from "@ranking-dsl/runtime";
const other = new PlanCtx().viewer({ endpoint: EP.redis.redis_default });
export default definePlan({ name: "t", build: (ctx) => ctx.viewer({ endpoint: EP.redis.redis_default }).concat({ rhs: other }) });
`;
    expect(error(src)).toBe(`${at(src, "concat")} concat: rhs belongs to another plan`);
  });

  it("PlanDefinition", () => {
    expect(error(planWith(viewer).replace('name: "t"', 'name: "bad-name"'))).toMatch(/^3:\d+ definePlan: name must match \^\[A-Za-z0-9_\]\+\$, got "bad-name"$/);
    expect(error(planWith(viewer).replace('name: "t"', 'name: "t", extra: 1'))).toMatch(/definePlan: unknown field 'extra'/);
    expect(error(`import { definePlan } from "@ranking-dsl/runtime";\ndefinePlan({ name: "t", build: (ctx) => ctx.viewer({ endpoint: EP.redis.redis_default }) });\n`)).toBe(
      "2:1 the plan file has no default export: write export default definePlan({...})",
    );
    expect(error(`export default { name: "t", build: () => 1 };\n`)).toMatch(/^1:1 the default export is not a plan/);
  });

  it("DefinePlanArguments", () => {
    let src = `import { definePlan } from "@ranking-dsl/runtime";\nexport default definePlan({ name: "t", build: 5 as any });\n`;
    expect(error(src)).toBe(`${at(src, "({")} definePlan: build must be a function (ctx) => node | node[]`);
    src = `import { definePlan } from "@ranking-dsl/runtime";\nexport default definePlan(5 as any);\n`;
    expect(error(src)).toBe(`${at(src, "(5")} definePlan: expected {name, build}`);
    src = `import { definePlan } from "@ranking-dsl/runtime";\nexport default definePlan(null as any);\n`;
    expect(error(src)).toBe(`${at(src, "(null")} definePlan: expected {name, build}`);
  });

  it("StaticBuilderArguments", () => {
    // What the static pass checks of Pred.in / Pred.regex, where it can see it.
    const cases: [string, string, string][] = [
      [`Pred.in(Key.id, [])`, "[]", "Pred.in's list is a non-empty array literal of numbers or of strings"],
      [`Pred.in(Key.id, [1, "a"] as any)`, `[1, "a"]`, "Pred.in's list holds only number literals or only string literals"],
      [`Pred.regex(5 as any, "x")`, "5 as any", "Pred.regex's first argument is a Key.* name"],
      [`Pred.regex(Key.title, 5 as any)`, "5 as any", "Pred.regex's pattern is a string literal or a P.* name"],
      [`Pred.regex(Key.title, "x", "g" as any)`, `"g"`, `Pred.regex's flags are "" or "i"`],
    ];
    for (const [pred, needle, message] of cases) {
      const src = planWith(`${viewer}.filter({ pred: ${pred} })`);
      expect(error(src), pred).toBe(`${at(src, needle)} ${message}`);
    }
  });

  it("StaticOperators", () => {
    let src = planWith(`${viewer}.vm({ outKey: Key.score, expr: ~Key.id })`);
    expect(error(src)).toBe(`${at(src, "~")} the operator ~ is not supported in expressions`);
    src = planWith(`${viewer}.vm({ outKey: Key.score, expr: Key.id << 1 })`);
    expect(error(src)).toBe(`${at(src, "<<")} the operator << is not supported in expressions (use + - * ?? comparisons && || !)`);
  });

  it("UnknownRegistryNames", () => {
    let src = planWith(`${viewer}.sort({ key: Key.nope as any })`);
    expect(error(src)).toBe(`${at(src, "nope")} unknown key 'Key.nope' (registry/keys.toml has: id, model_score_1, model_score_2, final_score, score, country, title, features_esr, features_lsr)`);
    // (dslc does not type-check; tsc would refuse P.nope first.)
    src = planWith(`${viewer}.vm({ outKey: Key.score, expr: Key.id * P.nope })`);
    expect(error(src)).toBe(`${at(src, "nope")} unknown param 'P.nope' (registry/params.toml has: media_age_penalty_weight, blocklist_regex, esr_cutoff, weight)`);
  });

  it("RuntimeRegexKey", () => {
    // Hidden from the static pass: the runtime refuses a Pred.regex key that is not a Key.*.
    const src = planWith(`{ const R = (globalThis as any)["__d" + "sl_Pred"]; R.regex(5, "x"); return ${viewer}; }`);
    expect(error(src)).toBe(`${at(src, "regex")} Pred.regex: expected Key.*, got number 5`);
  });

  it("SandboxReplies", () => {
    // What the host makes of __dsl_run's answer (the bootstrap always
    // returns JSON text; anything else is refused, never trusted).
    expect(readReply(5)).toEqual({ ok: false, message: "the sandbox returned a non-string" });
    expect(readReply({ ok: true })).toEqual({ ok: false, message: "the sandbox returned a non-string" });
    expect(readReply("{")).toEqual({ ok: false, message: "the sandbox returned text that is not JSON" });
    expect(readReply('{"ok":true,"plan":1}')).toEqual({ ok: true, plan: 1 });
    // And a reply that is not a string reaches the plan's file as an error.
    const src = planWith(viewer);
    const d = errors.bind(null, src);
    expect(d).toThrow("expected a compile error");
    let caught: any;
    try {
      compileSource(FILE, src, { run: () => readReply(undefined) });
    } catch (e) {
      caught = e;
    }
    expect(caught.diagnostics.map((x: any) => `${x.line}:${x.column} ${x.message}`)).toEqual([`${at(src, "definePlan(")} the sandbox returned a non-string`]);
  });

  it("RunOnlyOnce", () => {
    // __dsl_run, called again by the plan itself, does not run it twice.
    const src = planWith(`{ const r = String((globalThis as any)["__d" + "sl_run"]()); return ctx.viewer({ endpoint: EP.redis.redis_default, trace: r }); }`);
    expect(JSON.parse(plan(src).nodes[0].params.trace)).toEqual({ ok: false, message: "__dsl_run may run once", stack: expect.any(String) });
  });

  it("SourceMapRefusesABadMapping", () => {
    expect(() => new SourceMap("AAAA;!").original(2, 1)).toThrow("bad source map character !");
  });

  it("TokenUsedAsNumberAtRunTime", () => {
    // Hidden from the static pass behind a function: the run time still refuses.
    const src = planWith(`{ const f = (x: number) => x * 2; f(Key.id); return ${viewer}; }`);
    expect(error(src)).toMatch(/Key.id was used as a number at run time/);
  });

  it("UserThrow", () => {
    const src = planWith(`{ throw new Error("nope"); }`);
    expect(error(src)).toBe(`${at(src, "new Error")} nope`);
  });

  it("SyntaxError", () => {
    const src = planWith(`${viewer}.take({ count: 1 )`);
    expect(errors(src)[0]!.line).toBe(5);
  });
});
