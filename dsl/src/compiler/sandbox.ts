// Runs a plan's JavaScript in a V8 context of its own: no require, no
// process, no timers, no network, no eval or new Function (code generation
// from strings and WebAssembly are refused), no clock or randomness, and a
// time limit. The runtime is evaluated inside the same context, so nothing of
// the host realm is ever reachable from the plan; only source text goes in
// and only a JSON string comes out.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import vm from "node:vm";
import ts from "typescript";

/** The package's root directory (holds package.json and src/). */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
      if (pkg.name === "@ranking-dsl/runtime") return dir;
    } catch {
      // keep looking upwards
    }
    const up = dirname(dir);
    if (up === dir) throw new Error("dslc: cannot find the @ranking-dsl/runtime package root");
    dir = up;
  }
}

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) out.push(p);
  }
  return out;
}

let runtimeScript: vm.Script | undefined;

// One script that defines the runtime's modules as functions, loads them and
// installs the globals a plan sees. Compiled once per process.
function runtimeBootstrap(): vm.Script {
  if (runtimeScript) return runtimeScript;
  const src = join(packageRoot(), "src");
  const modules: string[] = [];
  for (const file of tsFiles(src)) {
    const rel = "/" + relative(src, file).split(sep).join("/").replace(/\.ts$/, "");
    if (rel.startsWith("/compiler/")) continue;
    const js = ts.transpileModule(readFileSync(file, "utf8"), {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: false },
      fileName: file,
    }).outputText;
    modules.push(`${JSON.stringify(rel)}: function (exports, require, module) {\n${js}\n}`);
  }
  const code = `"use strict";
(function () {
  const g = globalThis;
  const refuse = (what) => function () { throw new Error(what + " is not available in a plan (plans are deterministic and do no IO)"); };
  for (const name of ["console", "WebAssembly", "SharedArrayBuffer", "Atomics", "FinalizationRegistry", "WeakRef"]) delete g[name];
  Object.defineProperty(g, "Date", { value: refuse("Date") });
  Math.random = refuse("Math.random");
  const defs = {
${modules.join(",\n")}
  };
  const cache = Object.create(null);
  function resolve(from, spec) {
    const parts = from.split("/").slice(0, -1);
    for (const s of spec.replace(/\\.js$/, "").split("/")) {
      if (s === "..") parts.pop(); else if (s !== ".") parts.push(s);
    }
    return parts.join("/");
  }
  function load(id) {
    if (cache[id]) return cache[id].exports;
    const def = defs[id];
    if (!def) throw new Error("runtime module not found: " + id);
    const module = { exports: {} };
    cache[id] = module;
    def(module.exports, (spec) => load(resolve(id, spec)), module);
    return module.exports;
  }
  const rt = load("/index");
  const plan = load("/runtime/plan");
  const constant = (name, value) => Object.defineProperty(g, name, { value, writable: false, configurable: false, enumerable: false });
  constant("Key", rt.Key);
  constant("P", rt.P);
  constant("EP", rt.EP);
  constant("coalesce", rt.coalesce);
  constant("__dsl_E", rt.E);
  constant("__dsl_Pred", rt.Pred);
  const stringify = JSON.stringify;
  const Str = String;
  let factory;
  constant("__dsl_register", (fn) => { factory = fn; });
  constant("__dsl_run", () => {
    try {
      const module = { exports: {} };
      const require = (spec) => {
        if (spec === ${JSON.stringify("@ranking-dsl/runtime")}) return rt;
        throw new Error("a plan may import only @ranking-dsl/runtime, not " + Str(spec));
      };
      factory(module.exports, require, module);
      const def = module.exports && module.exports.default;
      if (def === undefined) throw new rt.DslError("the plan file has no default export: write export default definePlan({...})");
      return stringify({ ok: true, plan: plan.compilePlan(def) });
    } catch (e) {
      let message = "a non-Error value was thrown", stack = "", name = "";
      try { message = Str(e && e.message !== undefined ? e.message : e); } catch (_) {}
      try { stack = Str(e && e.stack); } catch (_) {}
      try { name = Str(e && e.name); } catch (_) {}
      return stringify({ ok: false, message, stack, name });
    }
  });
})();
`;
  runtimeScript = new vm.Script(code, { filename: "@ranking-dsl/runtime" });
  return runtimeScript;
}

export interface SandboxResult {
  ok: boolean;
  plan?: unknown;
  message?: string;
  name?: string;
  stack?: string;
}

export interface SandboxOptions {
  /** Longest a plan may run, module body and build together (default 5000 ms). */
  timeoutMs?: number;
}

/** Evaluates a transpiled (CommonJS) plan and returns its plan or its error. */
export function runInSandbox(filename: string, js: string, opts: SandboxOptions = {}): SandboxResult {
  const timeout = opts.timeoutMs ?? 5000;
  const context = vm.createContext(Object.create(null), {
    name: `plan ${filename}`,
    codeGeneration: { strings: false, wasm: false },
    microtaskMode: "afterEvaluate",
  });
  // The wrapper sits on a line of its own so the plan's lines keep their numbers.
  const wrapped = `__dsl_register(function (exports, require, module) {\n${js}\n});`;
  try {
    runtimeBootstrap().runInContext(context, { timeout });
    new vm.Script(wrapped, { filename, lineOffset: -1 }).runInContext(context, { timeout });
    const out = new vm.Script("__dsl_run()", { filename: "@ranking-dsl/runtime" }).runInContext(context, { timeout });
    if (typeof out !== "string") return { ok: false, message: "the sandbox returned a non-string" };
    return JSON.parse(out) as SandboxResult;
  } catch (e) {
    const err = e as { code?: string; message?: string };
    if (err && err.code === "ERR_SCRIPT_EXECUTION_TIMEOUT") {
      return { ok: false, message: `the plan ran longer than ${timeout} ms (a plan builds a DAG; it may not loop)` };
    }
    // Errors from the wrapper's own evaluation (a SyntaxError, say) come from
    // the sandbox realm; read them as strings only.
    return { ok: false, message: String(err && err.message), stack: String((err as { stack?: string }).stack ?? "") };
  }
}
