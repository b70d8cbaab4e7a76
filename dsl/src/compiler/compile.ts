// compileSource / compileFile: a .plan.ts file to its JSON plan. Steps: parse
// and check the source statically, rewrite natural expressions into builder
// calls, transpile to JavaScript, run it in the sandbox, check the result and
// print it canonically (sorted keys, two-space indent, newline at the end).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { analyze, formatDiagnostic, naturalTransformer, type Diagnostic } from "./analyze.js";
import { checkPlan } from "./check.js";
import { packageRoot, runInSandbox, type SandboxOptions } from "./sandbox.js";
import { SourceMap } from "./sourcemap.js";

/** The package version, written into every plan's built_by. */
export const TOOL_VERSION: string = JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")).version;

/** A plan that does not compile; `diagnostics` say where and why. */
export class CompileError extends Error {
  constructor(readonly diagnostics: Diagnostic[]) {
    super(diagnostics.map(formatDiagnostic).join("\n"));
    this.name = "CompileError";
  }
}

export interface CompiledPlan {
  /** The plan's name (the file is <name>.plan.json). */
  name: string;
  /** The plan as an object. */
  plan: Record<string, unknown>;
  /** The canonical JSON text written to disk. */
  json: string;
}

export interface CompileOptions extends SandboxOptions {
  /** @internal Runs the plan's JavaScript; tests replace it to hand the host a forged reply. */
  run?: typeof runInSandbox;
}

/** JSON with object keys sorted at every level; stable for equal plans. */
export function canonicalJSON(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (v !== null && typeof v === "object") {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort()) out[k] = sort((v as Record<string, unknown>)[k]);
      return out;
    }
    return v;
  };
  return JSON.stringify(sort(value), null, 2) + "\n";
}

export function compileFile(file: string, opts: CompileOptions = {}): CompiledPlan {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new CompileError([{ file, line: 1, column: 1, message: `cannot read the file: ${(e as Error).message}` }]);
  }
  return compileSource(file, text, opts);
}

export function compileSource(file: string, text: string, opts: CompileOptions = {}): CompiledPlan {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const syntax = (source as unknown as { parseDiagnostics: ts.DiagnosticWithLocation[] }).parseDiagnostics ?? [];
  if (syntax.length > 0) {
    throw new CompileError(
      syntax.map((d) => {
        const { line, character } = source.getLineAndCharacterOfPosition(d.start);
        return { file, line: line + 1, column: character + 1, message: ts.flattenDiagnosticMessageText(d.messageText, "\n") };
      }),
    );
  }
  const analysis = analyze(file, source);
  if (analysis.diagnostics.length > 0) throw new CompileError(analysis.diagnostics);

  const out = ts.transpileModule(text, {
    fileName: file,
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      sourceMap: true,
      inlineSources: false,
      removeComments: false,
    },
    transformers: { before: [naturalTransformer(analysis.slots)] },
  });
  const js = out.outputText.replace(/\n\/\/# sourceMappingURL=.*\s*$/, "\n");
  const map = new SourceMap(JSON.parse(out.sourceMapText ?? '{"mappings":""}').mappings);

  const result = (opts.run ?? runInSandbox)(file, js, { timeoutMs: opts.timeoutMs });
  if (!result.ok) {
    const at = locate(file, result.stack ?? "", map) ?? analysis.defineSite ?? { line: 1, column: 1 };
    throw new CompileError([{ file, line: at.line, column: at.column, message: result.message ?? "the plan failed" }]);
  }
  // The sandbox's answer is data from an untrusted realm: every node is
  // checked against the engine's catalog before it is written anywhere.
  const problem = checkPlan(result.plan);
  if (problem) {
    const at = analysis.defineSite ?? { line: 1, column: 1 };
    throw new CompileError([{ file, line: at.line, column: at.column, message: `the plan's output is malformed: ${problem}` }]);
  }
  const plan = result.plan as Record<string, unknown>;
  const full = { ...plan, built_by: { backend: "node-vm", tool: "dslc", tool_version: TOOL_VERSION } };
  return { name: plan.plan_name as string, plan: full, json: canonicalJSON(full) };
}

// The first stack frame in the plan file, mapped back to the .ts source.
function locate(file: string, stack: string, map: SourceMap): { line: number; column: number } | undefined {
  for (const line of stack.split("\n")) {
    const i = line.lastIndexOf(file + ":");
    if (i < 0) continue;
    const m = /^:(\d+):(\d+)/.exec(line.slice(i + file.length));
    if (!m) continue;
    const pos = map.original(Number(m[1]), Number(m[2]));
    if (pos) return pos;
  }
  return undefined;
}
