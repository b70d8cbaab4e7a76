// A plan runs with no IO: every way out is refused, statically when the
// source shows it, and by the sandbox when the source hides it.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { sandboxReply } from "../src/compiler/sandbox.js";
import { at, error, errors, plan, planWith } from "./helpers.js";

const pkg = resolve(import.meta.dirname, "..");

const viewer = "ctx.viewer({ endpoint: EP.redis.redis_default })";

// A build body that runs `attempt` (hidden from the static pass behind
// computed names) and reports the outcome in the viewer's trace.
function probe(attempt: string): string {
  const src = planWith(`{
    let outcome: string;
    try { const r: any = (() => { ${attempt} })(); outcome = "reached: " + typeof r; } catch (e: any) { outcome = "refused: " + e.message; }
    return ctx.viewer({ endpoint: EP.redis.redis_default, trace: outcome });
  }`);
  return plan(src).nodes[0].params.trace;
}

const g = `(globalThis as any)`;
const hidden = (name: string) => `${g}[${name.split("").map((c) => JSON.stringify(c)).join(" + ")}]`;

describe("sandbox: static refusals", () => {
  it("ImportOfAnotherModule", () => {
    for (const mod of ["fs", "node:fs", "node:child_process", "http", "./other.js"]) {
      const src = `import { readFileSync } from "${mod}";\n` + planWith(viewer);
      expect(error(src)).toBe(`${at(src, `"${mod}"`)} a plan may import only "@ranking-dsl/runtime" (found "${mod}")`);
    }
  });

  it("Require", () => {
    const src = planWith(`{ const fs = require("fs"); return ${viewer}; }`);
    expect(error(src)).toMatch(new RegExp(`^${at(src, "require")} require\\(\\) is not available in a plan`));
  });

  it("DynamicImport", () => {
    const src = planWith(`{ import("fs"); return ${viewer}; }`);
    expect(error(src)).toBe(`${at(src, 'import("fs")')} dynamic import() is not available in a plan (no IO)`);
  });

  it("ImportMetaAndImportEquals", () => {
    expect(errors(planWith(`{ const u = import.meta.url; return ${viewer}; }`))[0]!.message).toBe("import.meta is not available in a plan");
    expect(errors(`import fs = require("fs");\n` + planWith(viewer))[0]!.message).toBe("import = require(...) is not available in a plan");
  });

  it("ReExport", () => {
    expect(errors(`export { readFileSync } from "fs";\n` + planWith(viewer))[0]!.message).toBe("a plan may not re-export from another module");
  });

  it("CompilerNamesAreReserved", () => {
    expect(errors(planWith(`{ __dsl_register(() => 0); return ${viewer}; }`))[0]!.message).toMatch(/names starting with __dsl are reserved/);
  });
});

describe("sandbox: run-time refusals", () => {
  it("NoProcessRequireOrModuleSystem", () => {
    for (const name of ["process", "require", "module", "Buffer", "global", "__filename", "fetch", "XMLHttpRequest", "WebSocket"]) {
      expect(probe(`return ${hidden(name)}.toString();`), name).toMatch(/^refused: Cannot read properties of undefined/);
    }
  });

  it("RequireParameterRefusesOtherModules", () => {
    // The module wrapper's require, reached without calling it by name, is the
    // sandbox's own and knows one module.
    const src = `import { definePlan } from "@ranking-dsl/runtime";
const req = [require][0] as any;
let outcome = "none";
try { req("fs"); outcome = "reached"; } catch (e: any) { outcome = "refused: " + e.message; }
const rt = req("@ranking-dsl/runtime");
export default definePlan({ name: "t", build: (ctx) => ctx.viewer({ endpoint: rt.EP.redis.redis_default, trace: outcome }) });
`;
    expect(plan(src).nodes[0].params.trace).toBe("refused: a plan may import only @ranking-dsl/runtime, not fs");
  });

  it("NoTimers", () => {
    for (const name of ["setTimeout", "setInterval", "setImmediate", "queueMicrotask", "clearTimeout"]) {
      expect(probe(`return ${hidden(name)}(() => 0, 0);`), name).toMatch(/^refused: .* is not a function/);
    }
  });

  it("NoEvalOrFunctionConstructor", () => {
    const refused = "refused: Code generation from strings disallowed for this context";
    expect(probe(`return ${hidden("eval")}("1 + 1");`)).toBe(refused);
    expect(probe(`return new ${hidden("Function")}("return 1")();`)).toBe(refused);
    expect(probe(`return (() => 0).constructor("return process")();`)).toBe(refused);
    expect(probe(`return (async () => 0).constructor("return process")();`)).toBe(refused);
    expect(probe(`return (function* () {}).constructor("return process")();`)).toBe(refused);
    // The runtime's own objects live in the sandbox realm too: their
    // constructors cannot reach the host's Function.
    expect(probe(`return (Key.id as any).constructor.constructor("return process")();`)).toBe(refused);
    expect(probe(`return (ctx as any).constructor.constructor("return process")();`)).toBe(refused);
    expect(probe(`return ${g}.constructor.constructor("return process")();`)).toBe(refused);
  });

  it("NoWebAssemblyConsoleOrSharedMemory", () => {
    for (const name of ["WebAssembly", "console", "SharedArrayBuffer", "Atomics"]) {
      expect(probe(`return typeof ${hidden(name)} === "undefined" ? (null as any).x : "present";`), name).toMatch(/^refused:/);
    }
  });

  it("NoClockOrRandomness", () => {
    expect(probe(`return ${hidden("Date")}.now();`)).toMatch(/^refused: .*not a function|^refused: Date is not available/);
    expect(probe(`return new (${hidden("Date")})();`)).toMatch(/^refused: /);
    expect(probe(`return Math.random();`)).toBe("refused: Math.random is not available in a plan (plans are deterministic and do no IO)");
    // Intl formats the current time without a Date: the audit's probe wrote
    // "Tuesday, November 24, 2026 at 2:17:53 AM …" into a trace.
    expect(probe(`return typeof ${hidden("Intl")} === "undefined" ? (null as any).x : "present";`)).toMatch(/^refused:/);
    expect(probe(`return new (${hidden("Intl")}.DateTimeFormat)("en", { timeStyle: "full" }).format();`)).toBe(
      "refused: Cannot read properties of undefined (reading 'DateTimeFormat')",
    );
    const src = planWith(`ctx.viewer({ endpoint: EP.redis.redis_default, trace: new Intl.DateTimeFormat("en", { dateStyle: "full" } as any).format() })`);
    expect(error(src)).toBe(`${at(src, "Intl")} Intl is not defined`);
    // Nor any other clock a bare V8 context might have.
    for (const name of ["performance", "process", "Temporal"]) {
      expect(probe(`return ${hidden(name)}.now();`), name).toMatch(/^refused: Cannot read properties of undefined/);
    }
  });

  it("NoLocale", () => {
    // Locale-sensitive methods answer after the host's LANG: one plan could
    // compile differently on two machines.
    const refused = (what: string) => `refused: ${what} is not available in a plan (plans are deterministic and do no IO)`;
    expect(probe(`return (1234.5).toLocaleString();`)).toBe(refused("Number.prototype.toLocaleString"));
    expect(probe(`return [1.5].toLocaleString();`)).toBe(refused("Number.prototype.toLocaleString"));
    expect(probe(`return (10n).toLocaleString();`)).toBe(refused("BigInt.prototype.toLocaleString"));
    expect(probe(`return "a".localeCompare("b");`)).toBe(refused("String.prototype.localeCompare"));
    expect(probe(`return "I".toLocaleLowerCase();`)).toBe(refused("String.prototype.toLocaleLowerCase"));
    expect(probe(`return "i".toLocaleUpperCase();`)).toBe(refused("String.prototype.toLocaleUpperCase"));
    // The locale-free forms still work.
    expect(probe(`if ("I".toLowerCase() + String(1234.5) + ["b", "a"].sort().join("") !== "i1234.5ab") throw new Error("changed"); return 1;`)).toBe("reached: number");
  });

  it("HostFramesAreOpaque", () => {
    // V8's structured stack trace API would hand a plan the frames (and so the
    // functions and receivers) of whatever formats a stack: the hook cannot
    // even be installed, Error is frozen.
    expect(probe(`(Error as any).prepareStackTrace = (_: unknown, frames: any[]) => frames; return 1;`)).toBe(
      "refused: Cannot add property prepareStackTrace, object is not extensible",
    );
    expect(probe(`Object.defineProperty(Error, "prepareStackTrace", { value: () => 1 }); return 1;`)).toBe(
      "refused: Cannot define property prepareStackTrace, object is not extensible",
    );
  });

  it("InfiniteLoopTimesOut", () => {
    const src = planWith(`{ for (;;) {} }`);
    expect(error(src, 1000)).toBe("3:16 the plan ran longer than 1000 ms (a plan builds a DAG; it may not loop)");
  });

  it("LoopAtModuleTopLevelTimesOut", () => {
    const src = `import { definePlan } from "@ranking-dsl/runtime";\nwhile (true) {}\n` + planWith(viewer).split("\n").slice(1).join("\n");
    expect(errors(src, 1000)[0]!.message).toMatch(/the plan ran longer than 1000 ms/);
  });

  it("PromisesDoNotOutliveTheRun", () => {
    // A microtask that loops forever is still inside the time limit.
    const src = planWith(`{ Promise.resolve().then(() => { for (;;) {} }); return ${viewer}; }`);
    expect(errors(src, 1000)[0]!.message).toMatch(/the plan ran longer than 1000 ms/);
  });

  it("EachPlanGetsAFreshContext", () => {
    // One plan cannot leave state behind for the next.
    plan(planWith(`{ ${g}.leak = 1; return ${viewer}; }`));
    expect(probe(`return ${g}.leak;`)).toBe("reached: undefined");
  });
});

describe("sandbox: built-ins are frozen before the plan runs", () => {
  // The runtime runs in the plan's realm: a plan that could patch a built-in
  // could change what the runtime checks or writes. Each patch is refused
  // where the plan makes it.
  const patches: [string, string][] = [
    [`(JSON as any).stringify = () => "{}"`, "Cannot assign to read only property 'stringify' of object '[object JSON]'"],
    [`Number.isInteger = () => true`, "Cannot assign to read only property 'isInteger' of function 'function Number() { [native code] }'"],
    [`Object.defineProperty(Number, "isInteger", { value: () => true })`, "Cannot redefine property: isInteger"],
    [`(Object.prototype as any).toJSON = function () { return {}; }`, "Cannot add property toJSON, object is not extensible"],
    [`(Array.prototype as any).map = () => []`, "Cannot assign to read only property 'map' of object '[object Array]'"],
    [`delete (Array.prototype as any).includes`, "Cannot delete property 'includes' of [object Array]"],
    [`(Object.prototype as any).toString = () => "x"`, "Cannot assign to read only property 'toString' of a built-in"],
    [`(Object as any).keys = () => []`, "Cannot assign to read only property 'keys' of function 'function Object() { [native code] }'"],
    [`(Object.getPrototypeOf([][Symbol.iterator]()) as any).next = () => ({ done: true })`, "Cannot assign to read only property 'next' of object '[object Array Iterator]'"],
    [`${g}.JSON = { stringify: () => "{}" }`, "Cannot assign to read only property 'JSON' of object '[object global]'"],
    [`${g}.Number = {}`, "Cannot assign to read only property 'Number' of object '[object global]'"],
    [`${hidden("__dsl_Pred")} = {}`, "Cannot assign to read only property '__dsl_Pred' of object '[object global]'"],
    [`${hidden("Key")}.score = 1`, "Cannot assign to read only property 'score' of object '[object Object]'"],
  ];
  for (const [patch, message] of patches) {
    it(`Refuses ${patch}`, () => {
      const src = planWith(`{ ${patch}; return ${viewer}; }`);
      const d = errors(src);
      expect(d.map((x) => x.message)).toEqual([`${message} (in a plan, built-ins and the runtime's objects are frozen)`]);
      expect(d[0]!.line).toBe(5);
    });
  }

  it("NumberIsIntegerCannotLetAFractionThrough", () => {
    // The audit's example: with Number.isInteger patched, take({count: 1.5})
    // used to compile. The patch is refused, and so is the count.
    const src = planWith(`{ try { Number.isInteger = () => true; } catch {} return ${viewer}.take({ count: 1.5 }); }`);
    expect(error(src)).toBe(`${at(src, "take")} take: count must be an integer in 1..2147483647, got 1.5`);
  });

  it("ToJSONCannotForgeTheOutput", () => {
    // The audit's probe p2: a toJSON on Object.prototype that swapped the
    // plan for a core::follow with fanout 0 and no endpoint.
    const src = `import { definePlan } from "@ranking-dsl/runtime";
const x = (Object.prototype as any);
x.toJSON = function () { return this && this.schema_version ? { ...this, nodes: [{node_id: "n0", op: "core::follow", inputs: [], params: { fanout: 0 }}], outputs: ["n0"] } : this; };
export default definePlan({ name: "p2", build: (ctx) => ctx.viewer({ endpoint: EP.redis.redis_default }) });
`;
    expect(error(src)).toBe(`${at(src, " = function")} Cannot add property toJSON, object is not extensible (in a plan, built-ins and the runtime's objects are frozen)`);
  });

  it("TokensAndBuiltValuesCannotBeForged", () => {
    // Tokens and built expressions are known by identity, not by a field a
    // plan could copy, and a built value's IR cannot be edited afterwards.
    let src = planWith(`ctx.viewer({ endpoint: { ["__d" + "sl_token"]: "endpoint", id: "ep_9999", kind: "redis", name: "x" } as any })`);
    expect(error(src)).toBe(`${at(src, "viewer")} viewer: endpoint must be an EP.* endpoint, e.g. EP.redis.redis_default`);
    src = planWith(`${viewer}.vm({ outKey: { ["__d" + "sl_token"]: "key", info: { id: 1, name: "id", type: "float", writable: true } } as any, expr: 1 })`);
    expect(error(src)).toBe(`${at(src, "vm")} vm: outKey must be a Key.*`);
    // (Builders called outside a slot are refused statically; the global the
    // rewrite calls is the same Pred.)
    const Pr = hidden("__dsl_Pred");
    expect(probe(`return ${Pr}.not({ ["__d" + "sl_ir"]: "pred", ir: { op: "evil" } } as any);`)).toBe(
      "refused: Pred.not: expected a predicate (a comparison, true/false or Pred.*), got an object",
    );
    expect(probe(`const p: any = ${Pr}.const(true); p.ir.value = 5; return p;`)).toBe("refused: Cannot assign to read only property 'value' of object '[object Object]'");
    expect(probe(`const p: any = ${Pr}.in(${hidden("Key")}.id, [1]); p.ir.list.push({}); return p;`)).toBe("refused: Cannot add property 1, object is not extensible");
  });

  it("FrozenHintOnlyForWritesToFrozenObjects", () => {
    expect(error(planWith(`{ throw new Error("Cannot reach"); }`))).toMatch(/ Cannot reach$/);
    expect(error(planWith(`{ const o = Object.freeze({ a: 1 }) as any; o.a = 2; return ${viewer}; }`))).toMatch(
      / Cannot assign to read only property 'a' of object '\[object Object\]' \(in a plan, built-ins and the runtime's objects are frozen\)$/,
    );
  });

  it("OrdinaryAssignmentsStillWork", () => {
    // Frozen prototypes do not stop a plan from giving its own objects a
    // toString or an Error subclass its name.
    const out = probe(`
      class MyErr extends Error { constructor() { super("m"); this.name = "MyErr"; } }
      const o: any = {}; o.toString = () => "own";
      const e = new MyErr();
      if (String(o) + e.name + String(e instanceof MyErr) !== "ownMyErrtrue") throw new Error("broken");
      return 1;`);
    expect(out).toBe("reached: number");
  });
});

describe("sandbox: what a plan throws is read inside the time limit", () => {
  it("LoopingGetterOfAThrownValueTimesOut", () => {
    // The getter runs where the plan runs, under its time limit; the host
    // never reads a property of what the plan threw.
    for (const thrown of [
      `{ get message() { for (;;) {} } }`,
      `{ message: { toString() { for (;;) {} } } }`,
      `new Proxy({}, { get() { for (;;) {} }, getPrototypeOf() { for (;;) {} }, getOwnPropertyDescriptor() { for (;;) {} } })`,
    ]) {
      const src = planWith(`{ throw ${thrown}; }`);
      expect(errors(src, 1000)[0]!.message, thrown).toBe("the plan ran longer than 1000 ms (a plan builds a DAG; it may not loop)");
    }
  });

  it("ValuesThatAreNotErrors", () => {
    expect(error(planWith(`{ throw "plain words"; }`))).toMatch(/ plain words$/);
    expect(error(planWith(`{ throw { get code() { for (;;) {} } }; }`))).toMatch(/ the plan threw a value that is not an Error: \[object Object\]$/);
    expect(error(planWith(`{ throw { message: 42 }; }`))).toMatch(/ 42$/);
  });

  it("ThrowingToJSONCannotHangDslc", () => {
    // The audit's probe: Object.prototype.toJSON throws an object whose `code`
    // getter loops. dslc used to read that getter in the host, outside the
    // time limit, and never finished.
    const dir = mkdtempSync(join(tmpdir(), "dslc-hang-"));
    writeFileSync(
      join(dir, "h1.plan.ts"),
      `import { definePlan } from "@ranking-dsl/runtime";
(Object.prototype as any).toJSON = function () { throw { get code() { for (;;) {} } }; };
export default definePlan({ name: "h1", build: (ctx) => ctx.viewer({ endpoint: EP.redis.redis_default }) });
`,
    );
    const r = spawnSync(process.execPath, [join(pkg, "bin", "dslc"), "build", "h1.plan.ts", "--out", "o", "--timeout-ms", "2000"], {
      cwd: dir,
      encoding: "utf8",
      timeout: 60_000, // far beyond 2 s: only a hang reaches it (status is then null)
    });
    // It finishes, well within the limit: the patch is refused where the
    // plan makes it (and the reply would never call a toJSON anyway).
    expect(r.stderr).toBe("h1.plan.ts:2:33: error: Cannot add property toJSON, object is not extensible (in a plan, built-ins and the runtime's objects are frozen)\n");
    expect(r.status).toBe(1);
    expect(existsSync(join(dir, "o"))).toBe(false);
  });

  it("SandboxReplyIsCheckedFieldByField", () => {
    expect(sandboxReply(null)).toEqual({ ok: false, message: "the sandbox's reply is not an object" });
    expect(sandboxReply({ ok: "yes" })).toEqual({ ok: false, message: "the sandbox's reply is malformed" });
    expect(sandboxReply({ ok: false, message: 5 })).toEqual({ ok: false, message: "the sandbox's reply is malformed" });
    expect(sandboxReply({ ok: false, message: "m", stack: 5 })).toEqual({ ok: false, message: "m", stack: "" });
  });
});
