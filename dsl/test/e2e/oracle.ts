// An independent reading of the plan semantics (docs/dsl.md, and docs/plan.md's
// ops, expressions and predicates): given the Redis data and a compiled
// plan, the candidates rankd must print. Small and slow on purpose; it
// shares no code with the engine.
import { KEYS, PARAMS } from "../../src/generated/registry.js";

export interface Data {
  users: Map<number, Record<string, string>>;
  lists: Map<string, string[]>;
}

type Value = number | string | null;
interface Row {
  id: number;
  cols: Map<number, Value>;
}

export interface Candidate {
  id: number;
  fields: Record<string, number | string>;
}

const COUNTRY = KEYS.find((k) => k.name === "country")!.id;

export function run(plan: any, data: Data, userId: number, params: Record<string, number | string | null> = {}): Candidate[] {
  const paramById = new Map<number, Value>();
  for (const [name, v] of Object.entries(params)) paramById.set(PARAMS.find((p) => p.name === name)!.id, v);
  const results = new Map<string, Row[]>();
  const nodes = new Map<string, any>(plan.nodes.map((n: any) => [n.node_id, n]));
  const get = (id: string): Row[] => {
    if (!results.has(id)) results.set(id, exec(nodes.get(id)));
    return results.get(id)!;
  };
  const hydrate = (id: number): Row => {
    const u = data.users.get(id);
    return { id, cols: new Map([[COUNTRY, u && u.country !== undefined ? u.country : null]]) };
  };
  function exec(n: any): Row[] {
    const input = n.inputs.length > 0 ? get(n.inputs[0]) : [];
    const p = n.params;
    switch (n.op) {
      case "core::viewer":
        return [hydrate(userId)];
      case "core::follow":
      case "core::recommendation":
      case "core::media": {
        const list = n.op.slice("core::".length);
        const out: Row[] = [];
        for (const r of input) {
          for (const item of (data.lists.get(`${list}:${r.id}`) ?? []).slice(0, p.fanout)) {
            if (!/^-?\d+$/.test(item)) continue;
            out.push(list === "media" ? { id: Number(item), cols: new Map() } : hydrate(Number(item)));
          }
        }
        return out;
      }
      case "core::vm":
        return input.map((r) => ({ id: r.id, cols: new Map(r.cols).set(p.out_key, expr(plan.expr_table[p.expr_id], r)) }));
      case "core::filter":
        return input.filter((r) => pred(plan.pred_table[p.pred_id], r) === true);
      case "core::sort": {
        const val = (r: Row) => (p.by === 1 ? r.id : (r.cols.get(p.by) ?? null));
        const dir = p.order === "desc" ? -1 : 1;
        return [...input].sort((a, b) => {
          const x = val(a);
          const y = val(b);
          if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
          return x < y ? -dir : x > y ? dir : 0;
        });
      }
      case "core::take":
        return input.slice(0, p.count);
      case "core::concat":
        return [...input, ...get(p.rhs)];
      case "test::fixed_source":
        return Array.from({ length: p.row_count }, (_, i) => ({ id: i + 1, cols: new Map() }));
      case "test::sleep":
      case "test::busy_cpu":
        return input;
      default:
        throw new Error(`oracle: op ${n.op} is not modelled`);
    }
  }
  function expr(e: any, r: Row): number | null {
    switch (e.op) {
      case "const_number":
        return e.value;
      case "const_null":
        return null;
      case "key_ref":
        return e.key_id === 1 ? r.id : ((r.cols.get(e.key_id) as number | undefined) ?? null);
      case "param_ref":
        return (paramById.get(e.param_id) as number | undefined) ?? null;
      case "neg": {
        const x = expr(e.x, r);
        return x === null ? null : -x;
      }
      case "coalesce":
        return expr(e.a, r) ?? expr(e.b, r);
    }
    const a = expr(e.a, r);
    const b = expr(e.b, r);
    if (a === null || b === null) return null;
    return e.op === "add" ? a + b : e.op === "sub" ? a - b : a * b;
  }
  // A key's value of any type (string keys included), or an expression's.
  function value(e: any, r: Row): Value {
    if (e.op === "key_ref" && e.key_id !== 1) return r.cols.get(e.key_id) ?? null;
    return expr(e, r);
  }
  function pred(q: any, r: Row): boolean | null {
    switch (q.op) {
      case "const_bool":
        return q.value;
      case "and": {
        const a = pred(q.a, r);
        const b = pred(q.b, r);
        return a === false || b === false ? false : a === null || b === null ? null : true;
      }
      case "or": {
        const a = pred(q.a, r);
        const b = pred(q.b, r);
        return a === true || b === true ? true : a === null || b === null ? null : false;
      }
      case "not": {
        const x = pred(q.x, r);
        return x === null ? null : !x;
      }
      case "cmp": {
        if (q.a.op === "const_null" || q.b.op === "const_null") {
          const other = q.a.op === "const_null" ? q.b : q.a;
          const isNull = expr(other, r) === null;
          return q.cmp === "==" ? isNull : q.cmp === "!=" ? !isNull : false;
        }
        const a = expr(q.a, r);
        const b = expr(q.b, r);
        if (a === null || b === null) return false;
        return { "==": a === b, "!=": a !== b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b }[q.cmp as string]!;
      }
      case "in": {
        const v = value(q.lhs, r);
        return v !== null && (q.list as Value[]).includes(v);
      }
      case "is_null":
        return value(q.x, r) === null;
      case "not_null":
        return value(q.x, r) !== null;
      case "regex": {
        const v = r.cols.get(q.key_id) ?? null;
        const pattern = q.pattern.kind === "literal" ? q.pattern.value : paramById.get(q.pattern.param_id);
        if (typeof pattern !== "string") throw new Error("oracle: a regex param must be set");
        return typeof v === "string" && new RegExp(pattern, q.flags).test(v);
      }
      default:
        throw new Error(`oracle: predicate ${q.op} is not modelled`);
    }
  }
  const rows = plan.outputs.flatMap((o: string) => get(o));
  return rows.map((r: Row) => ({ id: r.id, fields: fields(r) }));
}

// Float columns by ascending key id, then string columns; non-null only.
function fields(r: Row): Record<string, number | string> {
  const out: Record<string, number | string> = {};
  const present = KEYS.filter((k) => k.id !== 1 && r.cols.has(k.id) && r.cols.get(k.id) !== null);
  for (const k of present.filter((k) => k.type === "float")) out[k.name] = r.cols.get(k.id)!;
  for (const k of present.filter((k) => k.type === "string")) out[k.name] = r.cols.get(k.id)!;
  return out;
}
