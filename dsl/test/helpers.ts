import { CompileError, compileSource, type CompiledPlan } from "../src/compiler/compile.js";
import type { Diagnostic } from "../src/compiler/analyze.js";

export const FILE = "/virtual/test.plan.ts";

/** A plan file around a build body: `build: (ctx) => <body>`. */
export function planWith(body: string, imports = "definePlan, E, Pred"): string {
  return `import { ${imports} } from "@ranking-dsl/runtime";\n\nexport default definePlan({\n  name: "t",\n  build: (ctx) => ${body},\n});\n`;
}

// Generous: the machine is shared and loaded; the loop tests pass their own short limit.
const TIMEOUT_MS = 10_000;

export function compile(src: string): CompiledPlan {
  return compileSource(FILE, src, { timeoutMs: TIMEOUT_MS });
}

export function plan(src: string): any {
  return compile(src).plan;
}

/** The diagnostics of a source that must not compile. */
export function errors(src: string, timeoutMs = TIMEOUT_MS): Diagnostic[] {
  try {
    compileSource(FILE, src, { timeoutMs });
  } catch (e) {
    if (e instanceof CompileError) return e.diagnostics;
    throw e;
  }
  throw new Error("expected a compile error, but the plan compiled");
}

/** The one diagnostic of a failing source, as "line:column message". */
export function error(src: string, timeoutMs = TIMEOUT_MS): string {
  const ds = errors(src, timeoutMs);
  if (ds.length !== 1) throw new Error(`expected one diagnostic, got ${ds.length}: ${ds.map((d) => d.message).join(" | ")}`);
  return `${ds[0]!.line}:${ds[0]!.column} ${ds[0]!.message}`;
}

/** Position (1-based line:column) of the first occurrence of `needle` in `src`. */
export function at(src: string, needle: string, nth = 0): string {
  let i = -1;
  for (let k = 0; k <= nth; k++) {
    i = src.indexOf(needle, i + 1);
    if (i < 0) throw new Error(`${needle} not in source`);
  }
  const before = src.slice(0, i).split("\n");
  return `${before.length}:${before[before.length - 1]!.length + 1}`;
}

export type { Diagnostic };
