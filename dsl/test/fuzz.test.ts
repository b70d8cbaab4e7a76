// Randomized tests of the compiler, seeded so a failure replays:
//  - random expression trees, each node written either naturally or with
//    E.*/Pred.*, compile to the IR built directly from the tree;
//  - random edits of a valid plan either compile or give a CompileError with
//    a position; nothing else (no crash, no internal error) ever escapes.
// FUZZ_SEED and FUZZ_RUNS override the seed and the number of cases.
import { describe, expect, it } from "vitest";
import { CompileError, compileSource } from "../src/compiler/compile.js";
import { FILE, planWith } from "./helpers.js";

const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
const RUNS = Number(process.env.FUZZ_RUNS ?? 150);

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Gen = { src: string; ir: unknown };
const KEYS: [string, number][] = [["id", 1], ["score", 2002], ["final_score", 2001], ["model_score_1", 1001]];
const PARAMS: [string, number][] = [["weight", 4], ["esr_cutoff", 3], ["media_age_penalty_weight", 1]];
const NUMS = [0, 1, 0.5, 2.5, 10, 1000, 0.1, -3, -0.25];
const CMPS: [string, string][] = [["==", "=="], ["===", "=="], ["!=", "!="], ["!==", "!="], ["<", "<"], ["<=", "<="], [">", ">"], [">=", ">="]];

function genExpr(r: () => number, depth: number): Gen {
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
  const natural = r() < 0.5;
  if (depth <= 0 || r() < 0.3) {
    switch (Math.floor(r() * 4)) {
      case 0: {
        const n = pick(NUMS);
        return natural ? { src: n < 0 ? `(${n})` : `${n}`, ir: { op: "const_number", value: n } } : { src: `E.const(${n})`, ir: { op: "const_number", value: n } };
      }
      case 1: {
        const [k, id] = pick(KEYS);
        return { src: natural ? `Key.${k}` : `E.key(Key.${k})`, ir: { op: "key_ref", key_id: id } };
      }
      case 2: {
        const [p, id] = pick(PARAMS);
        return { src: natural ? `P.${p}` : `E.param(P.${p})`, ir: { op: "param_ref", param_id: id } };
      }
      default:
        return { src: natural ? "null" : "E.null()", ir: { op: "const_null" } };
    }
  }
  const op = pick(["add", "sub", "mul", "coalesce", "neg", "coalesce3"]);
  if (op === "neg") {
    const x = genExpr(r, depth - 1);
    return { src: natural ? `(-(${x.src}))` : `E.neg(${x.src})`, ir: { op: "neg", x: x.ir } };
  }
  const a = genExpr(r, depth - 1);
  const b = genExpr(r, depth - 1);
  if (op === "coalesce3") {
    const c = genExpr(r, depth - 1);
    return { src: `coalesce(${a.src}, ${b.src}, ${c.src})`, ir: { op: "coalesce", a: a.ir, b: { op: "coalesce", a: b.ir, b: c.ir } } };
  }
  const sym = { add: "+", sub: "-", mul: "*", coalesce: "??" }[op]!;
  const src = natural ? `(${a.src} ${sym} ${b.src})` : op === "coalesce" && r() < 0.5 ? `coalesce(${a.src}, ${b.src})` : `E.${op}(${a.src}, ${b.src})`;
  return { src, ir: { op, a: a.ir, b: b.ir } };
}

function genPred(r: () => number, depth: number): Gen {
  const natural = r() < 0.5;
  const kind = depth <= 0 ? 0 : Math.floor(r() * 5);
  switch (kind) {
    case 0:
    case 1: {
      const [js, c] = CMPS[Math.floor(r() * CMPS.length)]!;
      const a = genExpr(r, 2);
      const b = genExpr(r, 2);
      return natural ? { src: `(${a.src} ${js} ${b.src})`, ir: { op: "cmp", cmp: c, a: a.ir, b: b.ir } } : { src: `Pred.cmp("${c}", ${a.src}, ${b.src})`, ir: { op: "cmp", cmp: c, a: a.ir, b: b.ir } };
    }
    case 2:
    case 3: {
      const op = kind === 2 ? "and" : "or";
      const a = genPred(r, depth - 1);
      const b = genPred(r, depth - 1);
      return { src: natural ? `(${a.src} ${op === "and" ? "&&" : "||"} ${b.src})` : `Pred.${op}(${a.src}, ${b.src})`, ir: { op, a: a.ir, b: b.ir } };
    }
    default: {
      if (r() < 0.3) {
        const v = r() < 0.5;
        return { src: natural ? `${v}` : `Pred.const(${v})`, ir: { op: "const_bool", value: v } };
      }
      const x = genPred(r, depth - 1);
      return { src: natural ? `(!${x.src})` : `Pred.not(${x.src})`, ir: { op: "not", x: x.ir } };
    }
  }
}

const viewer = "ctx.viewer({ endpoint: EP.redis.redis_default })";

describe("fuzz", () => {
  it("RandomExpressionsCompileToTheirTree", () => {
    const r = rng(SEED);
    for (let i = 0; i < RUNS; i++) {
      const e = genExpr(r, 4);
      const p = genPred(r, 3);
      const src = planWith(`${viewer}.vm({ outKey: Key.score, expr: ${e.src} }).filter({ pred: ${p.src} })`);
      const plan = compileSource(FILE, src, { timeoutMs: 10_000 }).plan as any;
      expect(plan.expr_table.e0, `seed ${SEED} case ${i}: ${e.src}`).toEqual(e.ir);
      expect(plan.pred_table.p0, `seed ${SEED} case ${i}: ${p.src}`).toEqual(p.ir);
    }
  });

  it("RandomEditsFailOnlyWithPositions", () => {
    const r = rng(SEED + 1);
    const base = planWith(
      `${viewer}.follow({ endpoint: EP.redis.redis_default, fanout: 10 }).vm({ outKey: Key.score, expr: Key.id * coalesce(P.weight, 0.5) }).filter({ pred: Key.score >= 0.5 && Pred.in(Key.country, ["US"]) }).sort({ key: Key.score, order: "desc" }).take({ count: 10 })`,
    );
    const tokens = ["/", "*", "Key.", "P.", "(", ")", "{", "}", '"', "`", ",", ".", "fs", "import(", "require", "null", "-", "!", "&&", "??", " as any", "[", "]", "0", "1e309", "__dsl", "=>", ";"];
    let compiled = 0;
    for (let i = 0; i < RUNS * 2; i++) {
      let src = base;
      for (let k = 0, n = 1 + Math.floor(r() * 3); k < n; k++) {
        const at = Math.floor(r() * src.length);
        const m = r();
        if (m < 0.4) src = src.slice(0, at) + src.slice(at + 1 + Math.floor(r() * 4));
        else if (m < 0.8) src = src.slice(0, at) + tokens[Math.floor(r() * tokens.length)] + src.slice(at);
        else {
          const from = Math.floor(r() * src.length);
          src = src.slice(0, at) + src.slice(from, from + 1 + Math.floor(r() * 8)) + src.slice(at);
        }
      }
      try {
        compileSource(FILE, src, { timeoutMs: 10_000 });
        compiled++;
      } catch (e) {
        if (!(e instanceof CompileError)) throw new Error(`seed ${SEED} case ${i}: ${(e as Error).stack}\n--- source ---\n${src}`);
        expect(e.diagnostics.length).toBeGreaterThan(0);
        for (const d of e.diagnostics) {
          expect(d.file).toBe(FILE);
          expect(d.line).toBeGreaterThanOrEqual(1);
          expect(d.column).toBeGreaterThanOrEqual(1);
          expect(d.message.length).toBeGreaterThan(0);
        }
      }
    }
    // Some edits are harmless (inside a comment or a string): both paths ran.
    expect(compiled).toBeGreaterThan(0);
  });
});
