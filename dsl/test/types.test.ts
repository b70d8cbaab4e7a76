// Editor support: the shipped .d.ts (dist/, built by npm ci / npm test) gives
// a plan in any folder its types, so mistakes are type errors before dslc runs.
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { planWith } from "./helpers.js";

const pkg = resolve(import.meta.dirname, "..");

// A project elsewhere on disk that installed the package (a symlink stands
// in for npm install), type-checking one plan file.
function typeErrors(source: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), "plan-types-"));
  mkdirSync(join(dir, "node_modules", "@ranking-dsl"), { recursive: true });
  symlinkSync(pkg, join(dir, "node_modules", "@ranking-dsl", "runtime"));
  writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n');
  const file = join(dir, "my.plan.ts");
  writeFileSync(file, source);
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ["lib.es2022.d.ts"],
    types: [],
    preserveSymlinks: true,
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const msg = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    if (!d.file) return msg;
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start!);
    return `${d.file === program.getSourceFile(file) ? "plan" : d.file.fileName}:${line + 1}:${character + 1}: ${msg}`;
  });
}

const viewer = "ctx.viewer({ endpoint: EP.redis.redis_default })";

describe("types", () => {
  it("SpecExamplesTypeCheck", () => {
    expect(
      typeErrors(
        planWith(`${viewer}
      .follow({ endpoint: EP.redis.redis_default })
      .vm({ outKey: Key.score, expr: Key.id * coalesce(P.weight, 0.5) })
      .filter({ pred: Key.score >= 0.5 && Pred.cmp(">=", E.key(Key.score), E.const(0.5)) })
      .sort({ key: Key.score, order: "desc" })
      .take({ count: 10 })`),
      ),
    ).toEqual([]);
  });

  it("MistakesAreTypeErrors", () => {
    const cases: [string, RegExp][] = [
      [`${viewer}.sort({ key: Key.scor })`, /Property 'scor' does not exist on type 'KeyTable'. Did you mean 'score'\?/],
      [`${viewer}.vm({ outKey: Key.score, expr: Key.id * P.wieght })`, /Property 'wieght' does not exist on type 'ParamTable'/],
      [`${viewer}.take({ cont: 3 })`, /'cont' does not exist in type 'TakeOptions'/],
      [`${viewer}.take({ count: "3" })`, /Type 'string' is not assignable to type 'number'/],
      [`${viewer}.sort({ key: 5 })`, /Type 'number' is not assignable to type 'KeyToken/],
      [`${viewer}.sort({ key: Key.id, order: "up" })`, /Type '"up"' is not assignable to type '"asc" \| "desc"/],
      [`ctx.viewer({ endpoint: EP.http.http_api })`, /Endpoint<"http">' is not assignable to type 'Endpoint<"redis">/],
      [`${viewer}.vm({ outKey: Key.country, expr: 1 })`, /is not assignable to type 'KeyToken<string, "float">'/],
      [`${viewer}.filter({ pred: Key.id + 1 })`, /Type 'number' is not assignable to type 'boolean'/],
      [`${viewer}.concat({ rhs: 1 })`, /Type 'number' is not assignable to type 'PlanNode'/],
      [`${viewer}.nope({})`, /Property 'nope' does not exist on type 'PlanNode'/],
      [`3`, /Type 'number' is not assignable to type 'PlanNode \| readonly PlanNode\[\]'/],
    ];
    for (const [body, re] of cases) {
      const errs = typeErrors(planWith(body));
      expect(errs.length, body).toBeGreaterThan(0);
      expect(errs.join("\n"), body).toMatch(re);
      expect(errs[0], body).toMatch(/^plan:5:/);
    }
  });
});
