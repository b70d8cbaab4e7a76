// definePlan, the build context and the chainable node handles. A plan's
// build function makes nodes; compilePlan walks back from the returned nodes
// and emits the JSON plan (schema_version 1) with stable ids n0.., e0.., p0...
import { OPS, PLAN_NAME_PATTERN, SCHEMA_VERSION, type OpParamInfo } from "../generated/registry.js";
import { exprIR, predIR, type ExprArg, type PredArg } from "./builders.js";
import { DslError, type ExprIR, type PredIR } from "./ir.js";
import { asEndpoint, asKey, type Endpoint, type KeyToken } from "./tokens.js";

/** A param of an engine op, from the catalog the Go engine generates (registry/tasks.toml). */
function opParam(op: string, name: string): OpParamInfo {
  const p = OPS[op]?.[name];
  if (!p) throw new Error(`registry/tasks.toml declares no param ${name} of ${op}`);
  return p;
}

/** fanout written when a source op leaves it out (spec 002's examples do): the engine's default for the bare form. */
export const DEFAULT_FANOUT = opParam("core::follow", "fanout").bareDefault as number;

type Trace = { /** A label the engine carries through logs and traces. */ trace?: string | null };

export type ViewerOptions = Trace & { endpoint: Endpoint<"redis"> };
export type SourceOptions = Trace & {
  endpoint: Endpoint<"redis">;
  /** Most list items read per input row (default 100). */
  fanout?: number;
};
export type VmOptions = Trace & {
  /** The float key the expression writes (not Key.id). */
  outKey: KeyToken<string, "float">;
  /** The expression, written inline: `Key.id * coalesce(P.weight, 0.5)`. */
  expr: ExprArg;
};
export type FilterOptions = Trace & {
  /** The predicate, written inline: `Key.score >= 0.5` or `Pred.cmp(...)`. */
  pred: PredArg;
};
export type SortOptions = Trace & {
  /** The key to sort by (spec 002 spells it `key`; `by` is the engine's name). */
  key?: KeyToken;
  by?: KeyToken;
  /** asc (default) or desc; nulls sort last both ways. */
  order?: "asc" | "desc";
};
export type TakeOptions = Trace & { /** How many active rows to keep (> 0). */ count: number };
export type ConcatOptions = Trace & { /** The rows appended after this node's rows. */ rhs: PlanNode };
export type SleepOptions = Trace & { durationMs: number; failAfterSleep?: boolean };
export type BusyCpuOptions = Trace & { busyWaitMs: number };
export type FixedSourceOptions = Trace & { /** Rows with ids 1..rowCount (default 1). */ rowCount?: number };

interface NodeRecord {
  seq: number;
  op: string;
  inputs: NodeRecord[];
  params: Record<string, unknown>;
  rhs?: NodeRecord;
  expr?: ExprIR;
  pred?: PredIR;
  site: string | undefined;
}

const HANDLE = new WeakMap<PlanNode, { ctx: PlanCtx; rec: NodeRecord }>();

function optionsOf(op: string, o: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (typeof o !== "object" || o === null || Array.isArray(o)) throw new DslError(`${op}: expected an options object`);
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k) && k !== "trace") {
      throw new DslError(`${op}: unknown option '${k}' (allowed: ${[...allowed, "trace"].join(", ")})`);
    }
  }
  return o as Record<string, unknown>;
}

function trace(op: string, o: Record<string, unknown>): string | null {
  const t = o.trace;
  if (t === undefined || t === null) return null;
  if (typeof t !== "string") throw new DslError(`${op}: trace must be a string`);
  return t;
}

/** v as the int param `param` of engine op `engineOp`, within the engine's bounds; `name` is the DSL's spelling. */
function intParam(op: string, name: string, engineOp: string, param: string, v: unknown): number {
  const p = opParam(engineOp, param);
  return intIn(op, name, v, p.min ?? Number.MIN_SAFE_INTEGER, p.max ?? Number.MAX_SAFE_INTEGER);
}

function intIn(op: string, name: string, v: unknown, min: number, max: number): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    throw new DslError(`${op}: ${name} must be an integer in ${min}..${max}, got ${JSON.stringify(v) ?? String(v)}`);
  }
  return v;
}

function redisEndpoint(op: string, v: unknown): string {
  const ep = asEndpoint(v);
  if (!ep) throw new DslError(`${op}: endpoint must be an EP.* endpoint, e.g. EP.redis.redis_default`);
  if (ep.kind !== "redis") throw new DslError(`${op}: endpoint EP.${ep.kind}.${ep.name} is not a redis endpoint`);
  return ep.id;
}

function callSite(): string | undefined {
  return new Error().stack;
}

/** A node of the plan; each method adds a node that reads this one. */
export class PlanNode {
  /** @internal */
  constructor(ctx: PlanCtx, rec: NodeRecord) {
    HANDLE.set(this, { ctx, rec });
    Object.freeze(this);
  }

  private add(op: string, params: Record<string, unknown>, extra: Partial<NodeRecord> = {}): PlanNode {
    const { ctx, rec } = HANDLE.get(this)!;
    return ctx._node(op, [rec], params, extra);
  }

  private source(op: string, o: SourceOptions): PlanNode {
    const opts = optionsOf(op, o, ["endpoint", "fanout"]);
    const engineOp = `core::${op}`;
    const p = opParam(engineOp, "fanout");
    const given = opts.fanout;
    const fanout = given === undefined ? p.bareDefault : intParam(op, "fanout", engineOp, "fanout", given);
    return this.add(engineOp, { endpoint: redisEndpoint(op, opts.endpoint), fanout, trace: trace(op, opts) });
  }

  /** For each row, the users it follows (LRANGE follow:{id}), hydrated with country. */
  follow(o: SourceOptions): PlanNode {
    return this.source("follow", o);
  }
  /** For each row, its recommendations (LRANGE recommendation:{id}), hydrated with country. */
  recommendation(o: SourceOptions): PlanNode {
    return this.source("recommendation", o);
  }
  /** For each row, its media ids (LRANGE media:{id}). */
  media(o: SourceOptions): PlanNode {
    return this.source("media", o);
  }
  /** Write `expr` into the float key `outKey` on every active row. */
  vm(o: VmOptions): PlanNode {
    const opts = optionsOf("vm", o, ["outKey", "expr"]);
    const key = asKey(opts.outKey);
    if (!key) throw new DslError("vm: outKey must be a Key.*");
    if (key.type !== "float" || !key.writable) {
      throw new DslError(`vm: outKey Key.${key.name} is not a writable float key`);
    }
    if (!("expr" in opts)) throw new DslError("vm: expr is required");
    const expr = exprIR(opts.expr, "vm expr");
    return this.add("core::vm", { out_key: key.id, trace: trace("vm", opts) }, { expr });
  }
  /** Keep the rows where `pred` is true, in their current order. */
  filter(o: FilterOptions): PlanNode {
    const opts = optionsOf("filter", o, ["pred"]);
    if (!("pred" in opts)) throw new DslError("filter: pred is required");
    const pred = predIR(opts.pred, "filter pred");
    return this.add("core::filter", { trace: trace("filter", opts) }, { pred });
  }
  /** Stable sort of the active rows by a key; nulls last. */
  sort(o: SortOptions): PlanNode {
    const opts = optionsOf("sort", o, ["key", "by", "order"]);
    if (opts.key !== undefined && opts.by !== undefined) throw new DslError("sort: give key or by, not both");
    const key = asKey(opts.key ?? opts.by);
    if (!key) throw new DslError("sort: key must be a Key.*");
    if (key.type === "feature_bundle") throw new DslError(`sort: Key.${key.name} is a feature bundle; sort by an int, float or string key`);
    const order = opts.order ?? "asc";
    if (order !== "asc" && order !== "desc") throw new DslError(`sort: order must be "asc" or "desc", got ${JSON.stringify(order)}`);
    return this.add("core::sort", { by: key.id, order, trace: trace("sort", opts) });
  }
  /** The first `count` active rows. */
  take(o: TakeOptions): PlanNode {
    const opts = optionsOf("take", o, ["count"]);
    return this.add("core::take", { count: intParam("take", "count", "core::take", "count", opts.count), trace: trace("take", opts) });
  }
  /** This node's rows, then rhs's rows (waits for both). */
  concat(o: ConcatOptions): PlanNode {
    const opts = optionsOf("concat", o, ["rhs"]);
    const h = opts.rhs instanceof PlanNode ? HANDLE.get(opts.rhs) : undefined;
    if (!h) throw new DslError("concat: rhs must be a node of this plan");
    if (h.ctx !== HANDLE.get(this)!.ctx) throw new DslError("concat: rhs belongs to another plan");
    return this.add("core::concat", { trace: trace("concat", opts) }, { rhs: h.rec });
  }
  /** test::sleep: the same rows after durationMs; optionally fails after it. */
  sleep(o: SleepOptions): PlanNode {
    const opts = optionsOf("sleep", o, ["durationMs", "failAfterSleep"]);
    const fail = opts.failAfterSleep ?? false;
    if (typeof fail !== "boolean") throw new DslError("sleep: failAfterSleep must be a boolean");
    return this.add("test::sleep", {
      duration_ms: intParam("sleep", "durationMs", "test::sleep", "duration_ms", opts.durationMs),
      fail_after_sleep: fail,
      trace: trace("sleep", opts),
    });
  }
  /** test::busy_cpu: the same rows after spinning a CPU for busyWaitMs. */
  busyCpu(o: BusyCpuOptions): PlanNode {
    const opts = optionsOf("busyCpu", o, ["busyWaitMs"]);
    return this.add("test::busy_cpu", {
      busy_wait_ms: intParam("busyCpu", "busyWaitMs", "test::busy_cpu", "busy_wait_ms", opts.busyWaitMs),
      trace: trace("busyCpu", opts),
    });
  }
}

/** The build context: makes the source nodes of a plan. */
export class PlanCtx {
  private readonly nodes: NodeRecord[] = [];

  /** @internal */
  _node(op: string, inputs: NodeRecord[], params: Record<string, unknown>, extra: Partial<NodeRecord> = {}): PlanNode {
    const rec: NodeRecord = { seq: this.nodes.length, op, inputs, params, site: callSite(), ...extra };
    this.nodes.push(rec);
    return new PlanNode(this, rec);
  }

  /** The viewer: one row, id = the request's user_id, with country (HGETALL user:{id}). */
  viewer(o: ViewerOptions): PlanNode {
    const opts = optionsOf("viewer", o, ["endpoint"]);
    return this._node("core::viewer", [], { endpoint: redisEndpoint("viewer", opts.endpoint), trace: trace("viewer", opts) });
  }
  /** test::fixed_source: rows with ids 1..rowCount. */
  fixedSource(o: FixedSourceOptions = {}): PlanNode {
    const opts = optionsOf("fixedSource", o, ["rowCount"]);
    const rowCount =
      opts.rowCount === undefined
        ? opParam("test::fixed_source", "row_count").default
        : intParam("fixedSource", "rowCount", "test::fixed_source", "row_count", opts.rowCount);
    return this._node("test::fixed_source", [], { row_count: rowCount, trace: trace("fixedSource", opts) });
  }

  /** @internal */
  _owns(n: unknown): NodeRecord | undefined {
    const h = n instanceof PlanNode ? HANDLE.get(n) : undefined;
    return h && h.ctx === this ? h.rec : undefined;
  }
}

export interface PlanSpec {
  /** The plan's name: letters, digits and _ ; the JSON file is <name>.plan.json. */
  name: string;
  /** Makes the nodes; returns the output node, or several (their rows are concatenated in order). */
  build: (ctx: PlanCtx) => PlanNode | readonly PlanNode[];
}

const DEFINITIONS = new WeakSet<object>();

export interface PlanDefinition {
  readonly name: string;
  readonly build: PlanSpec["build"];
}

/** Declares a plan; a plan file does `export default definePlan({...})`. */
export function definePlan(spec: PlanSpec): PlanDefinition {
  if (typeof spec !== "object" || spec === null) throw new DslError("definePlan: expected {name, build}");
  for (const k of Object.keys(spec)) {
    if (k !== "name" && k !== "build") throw new DslError(`definePlan: unknown field '${k}' (allowed: name, build)`);
  }
  if (typeof spec.name !== "string" || !new RegExp(PLAN_NAME_PATTERN).test(spec.name)) {
    throw new DslError(`definePlan: name must match ${PLAN_NAME_PATTERN}, got ${JSON.stringify(spec.name)}`);
  }
  if (typeof spec.build !== "function") throw new DslError("definePlan: build must be a function (ctx) => node | node[]");
  const def = Object.freeze({ name: spec.name, build: spec.build });
  DEFINITIONS.add(def);
  return def;
}

export function isPlanDefinition(v: unknown): v is PlanDefinition {
  return typeof v === "object" && v !== null && DEFINITIONS.has(v);
}

/** The JSON plan (schema_version 1) of a definition, keys in insertion order. */
export interface PlanJSON {
  schema_version: number;
  plan_name: string;
  nodes: { node_id: string; op: string; inputs: string[]; params: Record<string, unknown> }[];
  outputs: string[];
  expr_table?: Record<string, ExprIR>;
  pred_table?: Record<string, PredIR>;
}

function siteError(message: string, site: string | undefined): DslError {
  const err = new DslError(message);
  if (site) err.stack = `DslError: ${message}\n${site.split("\n").slice(1).join("\n")}`;
  return err;
}

/** Runs build and emits the plan. Nodes not reachable from the outputs are left out. */
export function compilePlan(def: PlanDefinition): PlanJSON {
  if (!isPlanDefinition(def)) throw new DslError("the default export is not a plan: write `export default definePlan({...})`");
  const ctx = new PlanCtx();
  const returned = def.build(ctx);
  if (returned !== null && typeof returned === "object" && typeof (returned as any).then === "function") {
    throw new DslError("build returned a Promise: build must return its nodes synchronously");
  }
  const list: unknown[] = Array.isArray(returned) ? [...returned] : [returned];
  if (list.length === 0) throw new DslError("build returned no nodes");
  const outs: NodeRecord[] = [];
  for (const [i, n] of list.entries()) {
    const rec = ctx._owns(n);
    if (!rec) throw new DslError(`build must return nodes of its ctx (output ${i} is ${n === undefined ? "undefined" : "not a node of this plan"})`);
    if (outs.includes(rec)) throw siteError(`build returned the same node twice (output ${i})`, rec.site);
    outs.push(rec);
  }
  // Reachable nodes, in the order build made them.
  const seen = new Set<NodeRecord>();
  const stack = [...outs];
  while (stack.length > 0) {
    const r = stack.pop()!;
    if (seen.has(r)) continue;
    seen.add(r);
    stack.push(...r.inputs);
    if (r.rhs) stack.push(r.rhs);
  }
  const ordered = [...seen].sort((a, b) => a.seq - b.seq);
  const ids = new Map<NodeRecord, string>(ordered.map((r, i) => [r, `n${i}`]));
  const exprIds = new Map<string, string>();
  const predIds = new Map<string, string>();
  const exprTable: Record<string, ExprIR> = {};
  const predTable: Record<string, PredIR> = {};
  const nodes = ordered.map((r) => {
    const params: Record<string, unknown> = { ...r.params };
    if (r.rhs) params.rhs = ids.get(r.rhs)!;
    if (r.expr) {
      const k = JSON.stringify(r.expr);
      if (!exprIds.has(k)) {
        exprIds.set(k, `e${exprIds.size}`);
        exprTable[exprIds.get(k)!] = r.expr;
      }
      params.expr_id = exprIds.get(k)!;
    }
    if (r.pred) {
      const k = JSON.stringify(r.pred);
      if (!predIds.has(k)) {
        predIds.set(k, `p${predIds.size}`);
        predTable[predIds.get(k)!] = r.pred;
      }
      params.pred_id = predIds.get(k)!;
    }
    return { node_id: ids.get(r)!, op: r.op, inputs: r.inputs.map((x) => ids.get(x)!), params };
  });
  const plan: PlanJSON = {
    schema_version: SCHEMA_VERSION,
    plan_name: def.name,
    nodes,
    outputs: outs.map((r) => ids.get(r)!),
  };
  if (exprIds.size > 0) plan.expr_table = exprTable;
  if (predIds.size > 0) plan.pred_table = predTable;
  return plan;
}
