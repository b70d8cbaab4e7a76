// Where the time of one plan's compilation goes: the static pass and the
// transpile (TypeScript compiler API), the sandbox (a fresh V8 context with
// the runtime evaluated in it), and the whole compileSource.
//   npm run bench        (vitest bench --run)
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import ts from "typescript";
import { bench, describe } from "vitest";
import { analyze, naturalTransformer } from "../src/compiler/analyze.js";
import { compileSource } from "../src/compiler/compile.js";
import { runInSandbox } from "../src/compiler/sandbox.js";

const file = resolve(import.meta.dirname, "..", "..", "plans", "complex_dag.plan.ts");
const text = readFileSync(file, "utf8");
const opts = { time: 3000, warmupTime: 500 };
const trivial = `"use strict"; Object.defineProperty(exports, "__esModule", { value: true });
const r = require("@ranking-dsl/runtime");
exports.default = (0, r.definePlan)({ name: "t", build: (ctx) => ctx.viewer({ endpoint: EP.redis.redis_default }) });`;

describe("compile complex_dag (10 nodes)", () => {
  bench("static pass + transpile", () => {
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
    const a = analyze(file, sf);
    ts.transpileModule(text, {
      fileName: file,
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, sourceMap: true },
      transformers: { before: [naturalTransformer(a.slots)] },
    });
  }, opts);
  bench("sandbox only (context + runtime + 1-node plan)", () => {
    runInSandbox("/bench/t.plan.ts", trivial);
  }, opts);
  bench("compileSource (all of it)", () => {
    compileSource(file, text);
  }, opts);
});
