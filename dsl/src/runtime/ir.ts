// The IR of compiled plans (see docs/dsl.md and the engine's plan format):
// expressions evaluated by core::vm and predicates evaluated by core::filter.

export type ExprIR =
  | { op: "const_number"; value: number }
  | { op: "const_null" }
  | { op: "key_ref"; key_id: number }
  | { op: "param_ref"; param_id: number }
  | { op: "add" | "sub" | "mul" | "coalesce"; a: ExprIR; b: ExprIR }
  | { op: "neg"; x: ExprIR };

export type CmpOp = "==" | "!=" | "<" | "<=" | ">" | ">=";

export type RegexPattern = { kind: "literal"; value: string } | { kind: "param"; param_id: number };

export type PredIR =
  | { op: "const_bool"; value: boolean }
  | { op: "and" | "or"; a: PredIR; b: PredIR }
  | { op: "not"; x: PredIR }
  | { op: "cmp"; cmp: CmpOp; a: ExprIR; b: ExprIR }
  | { op: "in"; lhs: ExprIR; list: number[] | string[] }
  | { op: "is_null" | "not_null"; x: ExprIR }
  | { op: "regex"; key_id: number; pattern: RegexPattern; flags: "" | "i" };

export const CMP_OPS: readonly CmpOp[] = ["==", "!=", "<", "<=", ">", ">="];

/** An error in a plan: the compiler reports it with the plan's file:line:column. */
export class DslError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DslError";
  }
}
