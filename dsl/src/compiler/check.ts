// checkPlan: the host's own check of what the sandbox returned. The sandbox
// runs the plan and the runtime in one realm, so the host does not trust its
// answer: every node's params are checked against the engine's catalog (OPS,
// generated from registry/tasks.toml) and the registry, and the expression and
// predicate tables against the IR grammar. A plan accepted here is one the
// runtime could have made; anything else is "the plan's output is malformed".
import { ENDPOINTS, KEYS, OPS, PARAMS, PLAN_NAME_PATTERN, SCHEMA_VERSION, type KeyInfo, type OpParamInfo } from "../generated/registry.js";

type Obj = Record<string, unknown>;

/** Ops that read no input node (the sources of a DAG); every other op reads exactly one. */
const SOURCE_OPS = new Set(["core::viewer", "test::fixed_source"]);

/** Params whose int value is a key id, and the keys each may name. */
const KEY_PARAMS: Record<string, (k: KeyInfo) => boolean> = {
  "core::vm.out_key": (k) => k.type === "float" && k.writable,
  "core::sort.by": (k) => k.type !== "feature_bundle",
};

const CMP = new Set(["==", "!=", "<", "<=", ">", ">="]);
const keyById = new Map(KEYS.map((k) => [k.id, k]));
const paramById = new Map(PARAMS.map((p) => [p.id, p]));
const endpointById = new Map(ENDPOINTS.map((e) => [e.id, e]));

class Malformed extends Error {}

function fail(msg: string): never {
  throw new Malformed(msg);
}

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

function exactKeys(o: Obj, allowed: string[], where: string): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) fail(`${where}: unexpected field ${k}`);
  for (const k of allowed) if (!(k in o)) fail(`${where}: missing field ${k}`);
}

/** Checks the sandbox's plan; returns what is wrong with it, or undefined. */
export function checkPlan(p: unknown): string | undefined {
  try {
    check(p);
    return undefined;
  } catch (e) {
    if (e instanceof Malformed) return e.message;
    if (e instanceof RangeError) return "nested too deeply";
    throw e;
  }
}

function check(p: unknown): void {
  if (!isObj(p)) fail("not an object");
  const top = ["schema_version", "plan_name", "nodes", "outputs", "expr_table", "pred_table"];
  for (const k of Object.keys(p)) if (!top.includes(k)) fail(`unexpected field ${k}`);
  if (p.schema_version !== SCHEMA_VERSION) fail("schema_version");
  if (typeof p.plan_name !== "string" || !new RegExp(PLAN_NAME_PATTERN).test(p.plan_name)) fail("plan_name");
  if (!Array.isArray(p.nodes) || p.nodes.length === 0) fail("nodes");
  const exprs = table(p, "expr_table", "e");
  const preds = table(p, "pred_table", "p");
  const usedExprs = new Set<string>();
  const usedPreds = new Set<string>();

  const ids = new Set<string>();
  for (const [i, n] of (p.nodes as unknown[]).entries()) {
    if (!isObj(n)) fail(`node ${i} is not an object`);
    // Ids are dense, in order: n0, n1, ...
    if (n.node_id !== `n${i}`) fail(`node ${i}: node_id must be n${i}`);
    const id = n.node_id;
    exactKeys(n, ["node_id", "op", "inputs", "params"], id);
    if (typeof n.op !== "string" || !Object.hasOwn(OPS, n.op)) fail(`${id}: unknown op ${JSON.stringify(n.op)}`);
    const op = n.op;
    if (!Array.isArray(n.inputs) || !n.inputs.every((x) => typeof x === "string" && ids.has(x))) fail(`${id}: inputs must name earlier nodes`);
    const arity = SOURCE_OPS.has(op) ? 0 : 1;
    if (n.inputs.length !== arity) fail(`${id}: ${op} reads ${arity} input node(s), not ${n.inputs.length}`);
    if (!isObj(n.params)) fail(`${id}: params must be an object`);
    const spec = OPS[op]!;
    for (const k of Object.keys(n.params)) if (!Object.hasOwn(spec, k)) fail(`${id}: ${op} has no param ${k}`);
    for (const [name, info] of Object.entries(spec)) {
      const where = `${id}: ${op} param ${name}`;
      if (!Object.hasOwn(n.params, name)) {
        // The DSL writes every param but the optional trace's absence; an
        // absent required param is never its output.
        if (info.required) fail(`${where} is required`);
        continue;
      }
      const v = n.params[name];
      if (v === null) {
        if (!info.nullable) fail(`${where} may not be null`);
        continue;
      }
      param(op, name, info, v, where, ids, exprs, preds);
      if (info.type === "expr_id") usedExprs.add(v as string);
      if (info.type === "pred_id") usedPreds.add(v as string);
    }
    ids.add(id);
  }
  if (!Array.isArray(p.outputs) || p.outputs.length === 0) fail("outputs");
  const outs = new Set<string>();
  for (const o of p.outputs) {
    if (typeof o !== "string" || !ids.has(o) || outs.has(o)) fail("outputs must name distinct nodes");
    outs.add(o);
  }
  // Every node is reachable from an output (the DSL leaves the others out),
  // and every table entry is used by a node.
  const seen = new Set<string>();
  const stack = [...outs];
  const byId = new Map((p.nodes as Obj[]).map((n) => [n.node_id as string, n]));
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (seen.has(id)) continue;
    seen.add(id);
    const n = byId.get(id)!;
    stack.push(...(n.inputs as string[]));
    const rhs = (n.params as Obj).rhs;
    if (typeof rhs === "string") stack.push(rhs);
  }
  for (const id of ids) if (!seen.has(id)) fail(`${id} is not reachable from the outputs`);
  for (const k of Object.keys(exprs)) if (!usedExprs.has(k)) fail(`expr_table entry ${k} is not used`);
  for (const k of Object.keys(preds)) if (!usedPreds.has(k)) fail(`pred_table entry ${k} is not used`);
  for (const [k, e] of Object.entries(exprs)) expr(e, `expr_table.${k}`);
  for (const [k, e] of Object.entries(preds)) pred(e, `pred_table.${k}`);
}

function table(p: Obj, name: string, prefix: string): Obj {
  const t = p[name];
  if (t === undefined) return {};
  if (!isObj(t) || Object.keys(t).length === 0) fail(`${name} must be an object with entries (absent when empty)`);
  for (const k of Object.keys(t)) if (!new RegExp(`^${prefix}\\d+$`).test(k)) fail(`${name}: bad id ${k}`);
  return t;
}

function param(op: string, name: string, info: OpParamInfo, v: unknown, where: string, ids: Set<string>, exprs: Obj, preds: Obj): void {
  switch (info.type) {
    case "int": {
      const min = info.min ?? Number.MIN_SAFE_INTEGER;
      const max = info.max ?? Number.MAX_SAFE_INTEGER;
      if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) fail(`${where} must be an integer in ${min}..${max}, got ${JSON.stringify(v)}`);
      const keyRule = KEY_PARAMS[`${op}.${name}`];
      if (keyRule) {
        const k = keyById.get(v);
        if (!k || !keyRule(k)) fail(`${where}: ${v} is not a key this param may name`);
      }
      return;
    }
    case "string":
      if (typeof v !== "string") fail(`${where} must be a string`);
      if (info.enum && !info.enum.includes(v)) fail(`${where} must be one of ${info.enum.join(", ")}`);
      return;
    case "bool":
      if (typeof v !== "boolean") fail(`${where} must be a boolean`);
      return;
    case "endpoint_ref": {
      const ep = typeof v === "string" ? endpointById.get(v) : undefined;
      if (!ep) fail(`${where}: ${JSON.stringify(v)} is not a registry endpoint`);
      if (info.endpointKind !== undefined && ep.kind !== info.endpointKind) fail(`${where}: ${ep.id} is not a ${info.endpointKind} endpoint`);
      return;
    }
    case "node_ref":
      if (typeof v !== "string" || !ids.has(v)) fail(`${where} must name an earlier node`);
      return;
    case "expr_id":
      if (typeof v !== "string" || !Object.hasOwn(exprs, v)) fail(`${where} must name an expr_table entry`);
      return;
    case "pred_id":
      if (typeof v !== "string" || !Object.hasOwn(preds, v)) fail(`${where} must name a pred_table entry`);
      return;
    default:
      fail(`${where}: the compiler does not know the param type ${info.type}`);
  }
}

const numericKey = (id: unknown) => typeof id === "number" && (keyById.get(id)?.type === "int" || keyById.get(id)?.type === "float");
const stringKey = (id: unknown) => typeof id === "number" && keyById.get(id)?.type === "string";

function expr(e: unknown, where: string): void {
  if (!isObj(e)) fail(`${where}: not an expression`);
  switch (e.op) {
    case "const_number":
      exactKeys(e, ["op", "value"], where);
      if (typeof e.value !== "number" || !Number.isFinite(e.value)) fail(`${where}: value must be a finite number`);
      return;
    case "const_null":
      exactKeys(e, ["op"], where);
      return;
    case "key_ref":
      exactKeys(e, ["op", "key_id"], where);
      if (!numericKey(e.key_id)) fail(`${where}: key_id must name an int or float key`);
      return;
    case "param_ref": {
      exactKeys(e, ["op", "param_id"], where);
      const t = typeof e.param_id === "number" ? paramById.get(e.param_id)?.type : undefined;
      if (t !== "int" && t !== "float") fail(`${where}: param_id must name an int or float param`);
      return;
    }
    case "add":
    case "sub":
    case "mul":
    case "coalesce":
      exactKeys(e, ["op", "a", "b"], where);
      expr(e.a, `${where}.a`);
      expr(e.b, `${where}.b`);
      return;
    case "neg":
      exactKeys(e, ["op", "x"], where);
      expr(e.x, `${where}.x`);
      return;
    default:
      fail(`${where}: unknown expression op ${JSON.stringify(e.op)}`);
  }
}

// An expression, or a string key (is_null / not_null and `in` may test one).
function exprOrStringKey(e: unknown, where: string): void {
  if (isObj(e) && e.op === "key_ref" && stringKey(e.key_id) && Object.keys(e).length === 2) return;
  expr(e, where);
}

function pred(e: unknown, where: string): void {
  if (!isObj(e)) fail(`${where}: not a predicate`);
  switch (e.op) {
    case "const_bool":
      exactKeys(e, ["op", "value"], where);
      if (typeof e.value !== "boolean") fail(`${where}: value must be a boolean`);
      return;
    case "and":
    case "or":
      exactKeys(e, ["op", "a", "b"], where);
      pred(e.a, `${where}.a`);
      pred(e.b, `${where}.b`);
      return;
    case "not":
      exactKeys(e, ["op", "x"], where);
      pred(e.x, `${where}.x`);
      return;
    case "cmp":
      exactKeys(e, ["op", "cmp", "a", "b"], where);
      if (typeof e.cmp !== "string" || !CMP.has(e.cmp)) fail(`${where}: unknown comparison ${JSON.stringify(e.cmp)}`);
      expr(e.a, `${where}.a`);
      expr(e.b, `${where}.b`);
      return;
    case "in": {
      exactKeys(e, ["op", "lhs", "list"], where);
      const list = e.list;
      if (!Array.isArray(list) || list.length === 0) fail(`${where}: list must be a non-empty array`);
      if (list.every((x) => typeof x === "string")) {
        if (!(isObj(e.lhs) && e.lhs.op === "key_ref" && stringKey(e.lhs.key_id) && Object.keys(e.lhs).length === 2)) {
          fail(`${where}: a list of strings needs a string key`);
        }
      } else if (list.every((x) => typeof x === "number" && Number.isFinite(x))) {
        expr(e.lhs, `${where}.lhs`);
      } else {
        fail(`${where}: list must hold only finite numbers or only strings`);
      }
      return;
    }
    case "is_null":
    case "not_null":
      exactKeys(e, ["op", "x"], where);
      exprOrStringKey(e.x, `${where}.x`);
      return;
    case "regex": {
      exactKeys(e, ["op", "key_id", "pattern", "flags"], where);
      if (!stringKey(e.key_id)) fail(`${where}: key_id must name a string key`);
      if (e.flags !== "" && e.flags !== "i") fail(`${where}: flags must be "" or "i"`);
      const pat = e.pattern;
      if (isObj(pat) && pat.kind === "literal") {
        exactKeys(pat, ["kind", "value"], `${where}.pattern`);
        if (typeof pat.value !== "string" || !validRegex(pat.value)) fail(`${where}: pattern must be a valid regular expression`);
      } else if (isObj(pat) && pat.kind === "param") {
        exactKeys(pat, ["kind", "param_id"], `${where}.pattern`);
        if (typeof pat.param_id !== "number" || paramById.get(pat.param_id)?.type !== "string") fail(`${where}: pattern param_id must name a string param`);
      } else {
        fail(`${where}: pattern must be {kind: "literal"} or {kind: "param"}`);
      }
      return;
    }
    default:
      fail(`${where}: unknown predicate op ${JSON.stringify(e.op)}`);
  }
}

function validRegex(s: string): boolean {
  try {
    new RegExp(s);
    return true;
  } catch {
    return false;
  }
}
