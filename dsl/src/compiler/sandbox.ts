// Runs a plan's JavaScript in a V8 context of its own: no require, no
// process, no timers, no network, no eval or new Function (code generation
// from strings and WebAssembly are refused), no clock, randomness or locale,
// and a time limit. The runtime is evaluated inside the same context, so nothing of
// the host realm is ever reachable from the plan; only source text goes in
// and only a JSON string comes out.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { types } from "node:util";
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
  // Intl formats the current time (new Intl.DateTimeFormat().format()) and
  // exposes the host's locale and time zone: gone with the other clocks.
  for (const name of ["console", "WebAssembly", "SharedArrayBuffer", "Atomics", "FinalizationRegistry", "WeakRef", "Intl"]) delete g[name];
  Object.defineProperty(g, "Date", { value: refuse("Date") });
  Math.random = refuse("Math.random");
  // The locale-sensitive methods answer after the host's locale (LANG), so
  // one plan could compile differently on two machines.
  for (const [proto, name, what] of [
    [String.prototype, "localeCompare", "String.prototype.localeCompare"],
    [String.prototype, "toLocaleLowerCase", "String.prototype.toLocaleLowerCase"],
    [String.prototype, "toLocaleUpperCase", "String.prototype.toLocaleUpperCase"],
    [Number.prototype, "toLocaleString", "Number.prototype.toLocaleString"],
    [BigInt.prototype, "toLocaleString", "BigInt.prototype.toLocaleString"],
  ]) Object.defineProperty(proto, name, { value: refuse(what), writable: true, enumerable: false, configurable: true });
  // Locks the realm before any plan code runs, so a plan cannot change what
  // the runtime (evaluated in this same realm) computes: every built-in
  // reachable from the global object (and the ones only syntax reaches, such
  // as the iterator and generator prototypes) is frozen, the runtime's own
  // objects too, and the global's properties can no longer be replaced.
  function lockdown() {
    const { freeze, getPrototypeOf, defineProperty, getOwnPropertyDescriptor, getOwnPropertyNames } = Object;
    const keysOf = Reflect.ownKeys;
    // Assigning a property that a frozen prototype also has fails (the
    // "override mistake"): for the properties programs commonly assign on
    // their own objects (this.name in an Error subclass, o.toString = ...),
    // the prototype's property becomes an accessor whose setter gives the
    // receiver an own property instead.
    const enableOverride = (obj, name) => {
      const d = getOwnPropertyDescriptor(obj, name);
      if (!d || !("value" in d) || !d.configurable) return;
      const value = d.value;
      defineProperty(obj, name, {
        get() { return value; },
        set(v) {
          if (this === obj) throw new TypeError("Cannot assign to read only property '" + String(name) + "' of a built-in");
          defineProperty(this, name, { value: v, writable: true, enumerable: true, configurable: true });
        },
        enumerable: d.enumerable,
        configurable: false,
      });
    };
    for (const k of keysOf(Object.prototype)) enableOverride(Object.prototype, k);
    for (const name of getOwnPropertyNames(g)) {
      const d = getOwnPropertyDescriptor(g, name);
      const proto = d && typeof d.value === "function" ? getOwnPropertyDescriptor(d.value, "prototype") : undefined;
      if (!proto || typeof proto.value !== "object" || proto.value === null || proto.value === Object.prototype) continue;
      for (const k of ["constructor", "toString", "valueOf", "toLocaleString", "name", "message"]) enableOverride(proto.value, k);
    }
    const gen = function* () {};
    const agen = async function* () {};
    const todo = [
      getPrototypeOf(gen), getPrototypeOf(gen()), getPrototypeOf(agen), getPrototypeOf(agen()), getPrototypeOf(async function () {}),
      getPrototypeOf([][Symbol.iterator]()), getPrototypeOf(new Map()[Symbol.iterator]()), getPrototypeOf(new Set()[Symbol.iterator]()),
      getPrototypeOf(""[Symbol.iterator]()), getPrototypeOf(/a/g[Symbol.matchAll]("")),
    ];
    for (const k of keysOf(g)) {
      const d = getOwnPropertyDescriptor(g, k);
      todo.push(d.value, d.get, d.set);
    }
    const seen = new WeakSet();
    while (todo.length > 0) {
      const o = todo.pop();
      if (o === null || (typeof o !== "object" && typeof o !== "function") || o === g || seen.has(o)) continue;
      seen.add(o);
      freeze(o);
      todo.push(getPrototypeOf(o));
      for (const k of keysOf(o)) {
        const d = getOwnPropertyDescriptor(o, k);
        if ("value" in d) todo.push(d.value);
        else todo.push(d.get, d.set);
      }
    }
    // The global object itself cannot be frozen in a vm context; its
    // properties can be made read-only and permanent one by one.
    for (const k of keysOf(g)) {
      const d = getOwnPropertyDescriptor(g, k);
      if (!d.configurable) continue;
      if ("value" in d) defineProperty(g, k, { value: d.value, writable: false, enumerable: d.enumerable, configurable: false });
      else defineProperty(g, k, { get: d.get, set: d.set, enumerable: d.enumerable, configurable: false });
    }
  }
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
  // Captured before plan code runs: the reply is made with these only.
  const stringify = JSON.stringify;
  const Str = String;
  const isArray = Array.isArray;
  const ownKeys = Reflect.ownKeys;
  const ownDesc = Reflect.getOwnPropertyDescriptor;
  const protoOf = Reflect.getPrototypeOf;
  const ObjectProto = Object.prototype;
  // JSON text of a value the runtime made (primitives, arrays and plain
  // objects): own data properties only, never a getter or a toJSON, so code of
  // the plan cannot change the reply on its way out.
  function encode(v) {
    if (v === null || typeof v === "boolean") return v === null ? "null" : v ? "true" : "false";
    if (typeof v === "number") {
      if (v !== v || v === Infinity || v === -Infinity) throw new Error("the plan's output holds a number that is not finite");
      return stringify(v);
    }
    if (typeof v === "string") return stringify(v);
    if (typeof v !== "object") throw new Error("the plan's output holds a " + typeof v);
    let text = "", sep = "";
    if (isArray(v)) {
      const d = ownDesc(v, "length");
      for (let i = 0; i < d.value; i++) {
        const e = ownDesc(v, Str(i));
        if (!e || !("value" in e)) throw new Error("the plan's output holds an array with a hole or a getter");
        text += sep + encode(e.value);
        sep = ",";
      }
      return "[" + text + "]";
    }
    const proto = protoOf(v);
    if (proto !== ObjectProto && proto !== null) throw new Error("the plan's output holds an object that is not plain");
    for (const k of ownKeys(v)) {
      if (typeof k !== "string") throw new Error("the plan's output holds a symbol key");
      const e = ownDesc(v, k);
      if (!("value" in e)) throw new Error("the plan's output holds a getter");
      if (!e.enumerable) continue;
      text += sep + stringify(k) + ":" + encode(e.value);
      sep = ",";
    }
    return "{" + text + "}";
  }
  // V8's words for a write to a frozen object say nothing of why it is frozen.
  const FROZEN = ["Cannot add property ", "Cannot assign to read only property ", "Cannot redefine property: ", "Cannot delete property ", "Cannot define property "];
  function frozenHint(m) {
    for (const p of FROZEN) if (m.startsWith(p)) return m + " (in a plan, built-ins and the runtime's objects are frozen)";
    return m;
  }
  // What the plan threw, as plain strings. Runs here, inside the context and
  // its time limit: a getter of the thrown value that loops is stopped like
  // any other loop, and nothing of the plan reaches the host.
  function describe(e) {
    let message = "the plan threw a value that is not an Error", stack = "";
    try {
      if (e !== null && (typeof e === "object" || typeof e === "function")) {
        const m = e.message;
        if (typeof m === "string") message = frozenHint(m);
        else if (m !== undefined) message = Str(m);
        else message = "the plan threw a value that is not an Error: " + Str(e);
        const s = e.stack;
        if (typeof s === "string") stack = s;
      } else {
        message = Str(e);
      }
    } catch (_) {
      // keep the defaults: a value whose message cannot be read
    }
    return "{" + '"ok":false,"message":' + stringify(typeof message === "string" ? message : "the plan failed") + ',"stack":' + stringify(typeof stack === "string" ? stack : "") + "}";
  }
  let factory, ran = false;
  constant("__dsl_register", (fn) => { if (factory === undefined) factory = fn; });
  constant("__dsl_run", () => {
    if (ran) return describe(new Error("__dsl_run may run once"));
    ran = true;
    try {
      const module = { exports: {} };
      const require = (spec) => {
        if (spec === ${JSON.stringify("@ranking-dsl/runtime")}) return rt;
        throw new Error("a plan may import only @ranking-dsl/runtime, not " + Str(spec));
      };
      factory(module.exports, require, module);
      const def = module.exports && module.exports.default;
      if (def === undefined) throw new rt.DslError("the plan file has no default export: write export default definePlan({...})");
      return '{"ok":true,"plan":' + encode(plan.compilePlan(def)) + "}";
    } catch (e) {
      return describe(e);
    }
  });
  lockdown();
})();
`;
  runtimeScript = new vm.Script(code, { filename: "@ranking-dsl/runtime" });
  return runtimeScript;
}

export interface SandboxResult {
  ok: boolean;
  plan?: unknown;
  message?: string;
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
  let script: vm.Script;
  try {
    script = new vm.Script(wrapped, { filename, lineOffset: -1 });
  } catch (e) {
    // Compiled in the host before any plan code runs.
    return { ok: false, message: ownString(e, "message") ?? "the plan's JavaScript does not compile" };
  }
  let out: unknown;
  try {
    runtimeBootstrap().runInContext(context, { timeout });
    script.runInContext(context, { timeout });
    out = new vm.Script("__dsl_run()", { filename: "@ranking-dsl/runtime" }).runInContext(context, { timeout });
  } catch (e) {
    // Nothing of the plan is read here, outside the time limit: __dsl_run
    // turns whatever the plan throws into strings inside the context, so what
    // arrives here is the host's timeout error or a value that got past that
    // (reported without touching it).
    if (ownString(e, "code") === "ERR_SCRIPT_EXECUTION_TIMEOUT") {
      return { ok: false, message: `the plan ran longer than ${timeout} ms (a plan builds a DAG; it may not loop)` };
    }
    return { ok: false, message: "the plan stopped the sandbox with a value it threw (not reported: the sandbox reads nothing of the plan outside its time limit)" };
  }
  return readReply(out);
}

/** What __dsl_run returned: JSON text, parsed in the host and checked field by field. */
export function readReply(out: unknown): SandboxResult {
  if (typeof out !== "string") return { ok: false, message: "the sandbox returned a non-string" };
  let reply: unknown;
  try {
    reply = JSON.parse(out);
  } catch {
    return { ok: false, message: "the sandbox returned text that is not JSON" };
  }
  return sandboxReply(reply);
}

// An own data property of a value that is a string, read without running any
// code of the value (no getters, no proxy traps, no prototype lookups).
function ownString(v: unknown, name: string): string | undefined {
  if (v === null || (typeof v !== "object" && typeof v !== "function") || types.isProxy(v)) return undefined;
  const d = Object.getOwnPropertyDescriptor(v, name);
  return d && "value" in d && typeof d.value === "string" ? d.value : undefined;
}

/** The sandbox's reply (host data parsed from its JSON text), checked field by field. */
export function sandboxReply(reply: unknown): SandboxResult {
  if (typeof reply !== "object" || reply === null || Array.isArray(reply)) return { ok: false, message: "the sandbox's reply is not an object" };
  const r = reply as Record<string, unknown>;
  if (r.ok === true) return { ok: true, plan: r.plan };
  if (r.ok === false && typeof r.message === "string") {
    return { ok: false, message: r.message, stack: typeof r.stack === "string" ? r.stack : "" };
  }
  return { ok: false, message: "the sandbox's reply is malformed" };
}
