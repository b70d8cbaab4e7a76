// A plan runs with no IO: every way out is refused, statically when the
// source shows it, and by the sandbox when the source hides it.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
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
  });

  it("HostFramesAreOpaque", () => {
    // V8's structured stack trace API: frames of the host must not hand out
    // their functions or receivers.
    const out = probe(`
      (Error as any).prepareStackTrace = (_: unknown, frames: any[]) => frames.map((f) => {
        const fn = f.getFunction && f.getFunction();
        const self = f.getThis && f.getThis();
        for (const o of [fn, self]) { if (o) { try { return typeof o.constructor.constructor("return process")(); } catch (e) {} } }
        return "opaque";
      }).join(",");
      const s = new Error("x").stack as any;
      if (String(s).includes("object")) throw new Error("escaped: " + s);
      return s;`);
    expect(out).toBe("reached: string");
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
    plan(planWith(`{ ${g}.leak = 1; (Array.prototype as any).leak = 2; return ${viewer}; }`));
    expect(probe(`return ${g}.leak ?? ([] as any).leak;`)).toBe("reached: undefined");
  });

  it("PatchedBuiltinsCannotForgeTheOutput", () => {
    // A plan that rewrites JSON.stringify affects only its own realm; the
    // runtime captured it at start-up, and the host checks what comes out.
    const src = planWith(`{ (JSON as any).stringify = () => '{"ok":true,"plan":{"schema_version":1,"plan_name":"x","nodes":[],"outputs":[]}}'; return ${viewer}; }`);
    expect(plan(src).plan_name).toBe("t");
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
    // The reply is encoded without calling any toJSON: the plan compiles to
    // what it built.
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, "o", "h1.plan.json"), "utf8")).nodes.map((n: any) => n.op)).toEqual(["core::viewer"]);
  });

  it("SandboxReplyIsCheckedFieldByField", () => {
    expect(sandboxReply(null)).toEqual({ ok: false, message: "the sandbox's reply is not an object" });
    expect(sandboxReply({ ok: "yes" })).toEqual({ ok: false, message: "the sandbox's reply is malformed" });
    expect(sandboxReply({ ok: false, message: 5 })).toEqual({ ok: false, message: "the sandbox's reply is malformed" });
    expect(sandboxReply({ ok: false, message: "m", stack: 5 })).toEqual({ ok: false, message: "m", stack: "" });
  });
});
