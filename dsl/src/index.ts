// @ranking-dsl/runtime: write ranking plans as spec 002 does.
//
//   import { definePlan, Pred, E } from "@ranking-dsl/runtime";
//   export default definePlan({
//     name: "mixed_pipeline",
//     build: (ctx) => ctx.viewer({ endpoint: EP.redis.redis_default })
//       .follow({ endpoint: EP.redis.redis_default })
//       .vm({ outKey: Key.score, expr: Key.id * coalesce(P.weight, 0.5) })
//       .filter({ pred: Key.score >= 0.5 }),
//   });
//
// Key, P, EP and coalesce are also globals of a plan file (spec 002's
// examples use them without importing them). `dslc build` compiles a plan.
import { coalesce as coalesceFn } from "./runtime/builders.js";
import { EP as EPTable, Key as KeyTable, P as ParamTable } from "./runtime/tokens.js";

export { E, Pred, coalesce } from "./runtime/builders.js";
export type { ExprArg, ExprValue, PredArg, PredValue } from "./runtime/builders.js";
export { DslError } from "./runtime/ir.js";
export type { CmpOp, ExprIR, PredIR, RegexPattern } from "./runtime/ir.js";
export { definePlan, PlanCtx, PlanNode, DEFAULT_FANOUT } from "./runtime/plan.js";
export type {
  BusyCpuOptions,
  ConcatOptions,
  FilterOptions,
  FixedSourceOptions,
  PlanDefinition,
  PlanJSON,
  PlanSpec,
  SleepOptions,
  SortOptions,
  SourceOptions,
  TakeOptions,
  ViewerOptions,
  VmOptions,
} from "./runtime/plan.js";
export { EP, Key, P } from "./runtime/tokens.js";
export type { Endpoint, EndpointTable, KeyTable, KeyToken, ParamTable, ParamToken } from "./runtime/tokens.js";

declare global {
  /** The registry's keys (registry/keys.toml). */
  const Key: typeof KeyTable;
  /** The registry's params (registry/params.toml), read from the request's param_overrides. */
  const P: typeof ParamTable;
  /** The registry's endpoints by kind (registry/endpoints.*.toml). */
  const EP: typeof EPTable;
  /** The first argument that is not null. */
  const coalesce: typeof coalesceFn;
}
