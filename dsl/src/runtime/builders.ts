// E.* and Pred.*: explicit builders of the expression and predicate IR. The
// compiler rewrites natural syntax (`Key.id * coalesce(P.weight, 0.5)`,
// `Key.score >= 0.5`) into calls of these same builders, so both spellings
// are checked by one implementation.
import type { CmpOp, ExprIR, PredIR } from "./ir.js";
import { CMP_OPS, DslError } from "./ir.js";
import { asKey, asParam, type KeyToken, type ParamToken } from "./tokens.js";

declare const exprBrand: unique symbol;
declare const predBrand: unique symbol;

/** A built expression. Typed as a number so it composes in natural expressions. */
export type ExprValue = number & { readonly [exprBrand]: true };
/** A built predicate. Typed as a boolean so it composes with && || !. */
export type PredValue = boolean & { readonly [predBrand]: true };

/** Anything an expression position accepts: a number, null, Key.*, P.*, E.*(...). */
export type ExprArg = number | null;
/** Anything a predicate position accepts: a comparison, true/false, Pred.*(...). */
export type PredArg = boolean;

// A built expression or predicate is recognised by identity (this map),
// never by a field a plan could copy onto an object of its own; its IR is
// frozen, so a plan cannot edit it after the builder checked it.
const BOXES = new WeakMap<object, { kind: "expr" | "pred"; ir: ExprIR | PredIR }>();

function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}

function box(kind: "expr" | "pred", ir: ExprIR | PredIR): object {
  deepFreeze(ir);
  // `ir` is there to be read (tests, debugging); the map is what counts.
  const b = { ir };
  Object.defineProperty(b, Symbol.toPrimitive, {
    value: () => {
      throw new DslError(`a built ${kind === "expr" ? "expression" : "predicate"} was used as a plain value at run time; write it inline as vm's expr or filter's pred`);
    },
  });
  BOXES.set(b, { kind, ir });
  return Object.freeze(b);
}

function boxed(v: unknown, kind: "expr" | "pred"): ExprIR | PredIR | undefined {
  const b = typeof v === "object" && v !== null ? BOXES.get(v) : undefined;
  return b && b.kind === kind ? b.ir : undefined;
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (v === undefined) return "undefined";
  if (typeof v === "object") {
    if (boxed(v, "pred")) return "a predicate";
    if (boxed(v, "expr")) return "an expression";
    if (asKey(v)) return `Key.${asKey(v)!.name}`;
    if (asParam(v)) return `P.${asParam(v)!.name}`;
    return "an object";
  }
  return `${typeof v} ${JSON.stringify(v)}`;
}

/** The ExprIR of an expression argument; throws a DslError naming `where`. */
export function exprIR(v: unknown, where: string): ExprIR {
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new DslError(`${where}: ${v} is not a finite number`);
    return { op: "const_number", value: v };
  }
  if (v === null) return { op: "const_null" };
  if (typeof v === "object") {
    const ir = boxed(v, "expr");
    if (ir) return ir as ExprIR;
    const key = asKey(v);
    if (key) {
      if (key.type !== "int" && key.type !== "float") {
        throw new DslError(`${where}: Key.${key.name} is a ${key.type} key; expressions read only int and float keys`);
      }
      return { op: "key_ref", key_id: key.id };
    }
    const param = asParam(v);
    if (param) {
      if (param.type !== "int" && param.type !== "float") {
        throw new DslError(`${where}: P.${param.name} is a ${param.type} param; expressions read only int and float params`);
      }
      return { op: "param_ref", param_id: param.id };
    }
  }
  throw new DslError(`${where}: expected an expression (a number, null, Key.*, P.* or E.*), got ${describe(v)}`);
}

/** The PredIR of a predicate argument; throws a DslError naming `where`. */
export function predIR(v: unknown, where: string): PredIR {
  if (typeof v === "boolean") return { op: "const_bool", value: v };
  const ir = boxed(v, "pred");
  if (ir) return ir as PredIR;
  throw new DslError(`${where}: expected a predicate (a comparison, true/false or Pred.*), got ${describe(v)}`);
}

const expr = (ir: ExprIR) => box("expr", ir) as unknown as ExprValue;
const pred = (ir: PredIR) => box("pred", ir) as unknown as PredValue;

function binary(op: "add" | "sub" | "mul" | "coalesce", a: unknown, b: unknown): ExprValue {
  return expr({ op, a: exprIR(a, `E.${op} a`), b: exprIR(b, `E.${op} b`) });
}

/** Expression builders (the ExprIR of core::vm). There is no division. */
export const E = Object.freeze({
  /** The value of a key on the row (`Key.id` is the row id). */
  key(key: KeyToken): ExprValue {
    const info = asKey(key);
    if (!info) throw new DslError(`E.key: expected Key.*, got ${describe(key)}`);
    return expr(exprIR(key, "E.key"));
  },
  /** The value of a request param (null when the request does not set it). */
  param(param: ParamToken): ExprValue {
    if (!asParam(param)) throw new DslError(`E.param: expected P.*, got ${describe(param)}`);
    return expr(exprIR(param, "E.param"));
  },
  /** A number constant. */
  const(value: number): ExprValue {
    if (typeof value !== "number") throw new DslError(`E.const: expected a number, got ${describe(value)}`);
    return expr(exprIR(value, "E.const"));
  },
  /** The null constant. */
  null(): ExprValue {
    return expr({ op: "const_null" });
  },
  add: (a: ExprArg, b: ExprArg): ExprValue => binary("add", a, b),
  sub: (a: ExprArg, b: ExprArg): ExprValue => binary("sub", a, b),
  mul: (a: ExprArg, b: ExprArg): ExprValue => binary("mul", a, b),
  /** a when it is not null, else b. */
  coalesce: (a: ExprArg, b: ExprArg): ExprValue => binary("coalesce", a, b),
  neg: (x: ExprArg): ExprValue => expr({ op: "neg", x: exprIR(x, "E.neg") }),
});

/** `coalesce(a, b, ...)`: the first argument that is not null (folded right). */
export function coalesce(a: ExprArg, b: ExprArg, ...rest: ExprArg[]): ExprValue {
  const all = [a, b, ...rest];
  if (all.length < 2 || all.some((x) => x === undefined)) throw new DslError("coalesce: needs at least two arguments");
  let acc = exprIR(all[all.length - 1], "coalesce");
  for (let i = all.length - 2; i >= 0; i--) acc = { op: "coalesce", a: exprIR(all[i], "coalesce"), b: acc };
  return expr(acc);
}

function fold(op: "and" | "or", ps: unknown[]): PredValue {
  if (ps.length < 2) throw new DslError(`Pred.${op}: needs at least two predicates`);
  let acc = predIR(ps[0], `Pred.${op}`);
  for (let i = 1; i < ps.length; i++) acc = { op, a: acc, b: predIR(ps[i], `Pred.${op}`) };
  return pred(acc);
}

/** Predicate builders (the PredIR of core::filter). */
export const Pred = Object.freeze({
  /** Compare two expressions. A runtime null compares false (even with !=); a literal null makes ==/!= an is-null test. */
  cmp(op: CmpOp, a: ExprArg, b: ExprArg): PredValue {
    if (!CMP_OPS.includes(op)) throw new DslError(`Pred.cmp: unknown comparison ${JSON.stringify(op)} (use one of ${CMP_OPS.join(" ")})`);
    // A string key against a literal null: the is-null test ==/!= means there.
    const ka = asKey(a), kb = asKey(b);
    const str = ka?.type === "string" ? ka : kb?.type === "string" ? kb : undefined;
    if (str && (op === "==" || op === "!=")) {
      const other = str === ka ? b : a;
      if (exprIR(other, "Pred.cmp").op === "const_null") {
        return pred({ op: op === "==" ? "is_null" : "not_null", x: { op: "key_ref", key_id: str.id } });
      }
    }
    return pred({ op: "cmp", cmp: op, a: exprIR(a, "Pred.cmp a"), b: exprIR(b, "Pred.cmp b") });
  },
  and: (...ps: PredArg[]): PredValue => fold("and", ps),
  or: (...ps: PredArg[]): PredValue => fold("or", ps),
  not: (x: PredArg): PredValue => pred({ op: "not", x: predIR(x, "Pred.not") }),
  /** The expression's value is one of the list (all numbers, or all strings for a string key). */
  in(lhs: ExprArg | KeyToken, values: readonly number[] | readonly string[]): PredValue {
    if (!Array.isArray(values)) throw new DslError("Pred.in: the list must be a non-empty array");
    // Checked and used as one copy: reading the plan's array twice could give two answers.
    const list: unknown[] = [...values];
    if (list.length === 0) throw new DslError("Pred.in: the list must be a non-empty array");
    const allNum = list.every((x) => typeof x === "number" && Number.isFinite(x));
    const allStr = list.every((x) => typeof x === "string");
    if (!allNum && !allStr) throw new DslError("Pred.in: the list must hold only numbers or only strings");
    const key = asKey(lhs);
    let l: ExprIR;
    if (key && key.type === "string") {
      if (!allStr) throw new DslError(`Pred.in: Key.${key.name} is a string key; the list must hold strings`);
      l = { op: "key_ref", key_id: key.id };
    } else {
      if (allStr) throw new DslError("Pred.in: a list of strings needs a string key (e.g. Key.country)");
      l = exprIR(lhs, "Pred.in");
    }
    return pred({ op: "in", lhs: l, list: list as number[] | string[] });
  },
  isNull: (x: ExprArg | KeyToken): PredValue => pred({ op: "is_null", x: refIR(x, "Pred.isNull") }),
  notNull: (x: ExprArg | KeyToken): PredValue => pred({ op: "not_null", x: refIR(x, "Pred.notNull") }),
  /** The string key matches the pattern somewhere (a literal, or a string param); flags "" or "i". */
  regex(key: KeyToken, pattern: string | ParamToken, flags: "" | "i" = ""): PredValue {
    const info = asKey(key);
    if (!info) throw new DslError(`Pred.regex: expected Key.*, got ${describe(key)}`);
    if (info.type !== "string") throw new DslError(`Pred.regex: Key.${info.name} is a ${info.type} key; regex reads string keys`);
    if (flags !== "" && flags !== "i") throw new DslError(`Pred.regex: flags must be "" or "i", got ${describe(flags)}`);
    if (typeof pattern === "string") {
      try {
        new RegExp(pattern);
      } catch {
        throw new DslError(`Pred.regex: ${JSON.stringify(pattern)} is not a valid regular expression`);
      }
      return pred({ op: "regex", key_id: info.id, pattern: { kind: "literal", value: pattern }, flags });
    }
    const param = asParam(pattern);
    if (!param) throw new DslError(`Pred.regex: the pattern must be a string or P.*, got ${describe(pattern)}`);
    if (param.type !== "string") throw new DslError(`Pred.regex: P.${param.name} is a ${param.type} param; a pattern param must be a string`);
    return pred({ op: "regex", key_id: info.id, pattern: { kind: "param", param_id: param.id }, flags });
  },
  /** A constant predicate. */
  const(value: boolean): PredValue {
    if (typeof value !== "boolean") throw new DslError(`Pred.const: expected true or false, got ${describe(value)}`);
    return pred({ op: "const_bool", value });
  },
});

// is_null / not_null may test a string key too.
function refIR(x: unknown, where: string): ExprIR {
  const key = asKey(x);
  if (key && key.type === "string") return { op: "key_ref", key_id: key.id };
  return exprIR(x, where);
}
