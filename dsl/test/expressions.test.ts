// Natural expressions and E.* / Pred.* compile to the same IR; every
// unsupported form is a compile error at the right line:column.
import { describe, expect, it } from "vitest";
import { at, error, errors, plan, planWith } from "./helpers.js";

const viewer = "ctx.viewer({ endpoint: EP.redis.redis_default })";
const exprOf = (e: string) => plan(planWith(`${viewer}.vm({ outKey: Key.score, expr: ${e} })`)).expr_table.e0;
const predOf = (p: string) => plan(planWith(`${viewer}.filter({ pred: ${p} })`)).pred_table.p0;

const key = (id: number) => ({ op: "key_ref", key_id: id });
const num = (value: number) => ({ op: "const_number", value });
const param = (id: number) => ({ op: "param_ref", param_id: id });

describe("natural expressions", () => {
  it("ArithmeticMatchesBuilders", () => {
    const cases: [string, string, unknown][] = [
      ["Key.id * coalesce(P.weight, 0.5)", "E.mul(E.key(Key.id), E.coalesce(E.param(P.weight), E.const(0.5)))", {
        op: "mul",
        a: key(1),
        b: { op: "coalesce", a: param(4), b: num(0.5) },
      }],
      ["Key.id + 1", "E.add(E.key(Key.id), E.const(1))", { op: "add", a: key(1), b: num(1) }],
      ["Key.id - Key.score", "E.sub(E.key(Key.id), E.key(Key.score))", { op: "sub", a: key(1), b: key(2002) }],
      ["-Key.score", "E.neg(E.key(Key.score))", { op: "neg", x: key(2002) }],
      ["-2.5", "E.const(-2.5)", num(-2.5)],
      ["P.weight ?? 1", "E.coalesce(E.param(P.weight), E.const(1))", { op: "coalesce", a: param(4), b: num(1) }],
      ["(Key.id + 1) * 2", "E.mul(E.add(Key.id, 1), 2)", { op: "mul", a: { op: "add", a: key(1), b: num(1) }, b: num(2) }],
      ["coalesce(Key.score, P.weight, 0)", "E.coalesce(Key.score, E.coalesce(P.weight, 0))", {
        op: "coalesce",
        a: key(2002),
        b: { op: "coalesce", a: param(4), b: num(0) },
      }],
      ["null", "E.null()", { op: "const_null" }],
      ["Key.id * E.const(3)", "E.mul(Key.id, 3)", { op: "mul", a: key(1), b: num(3) }],
      ["(Key.id as number) * (2 satisfies number) + P.weight!", "E.add(E.mul(Key.id, 2), P.weight)", {
        op: "add",
        a: { op: "mul", a: key(1), b: num(2) },
        b: param(4),
      }],
    ];
    for (const [natural, built, ir] of cases) {
      expect(exprOf(natural), natural).toEqual(ir);
      expect(exprOf(built), built).toEqual(ir);
    }
  });

  it("PredicatesMatchBuilders", () => {
    const cmp = (c: string, a: unknown, b: unknown) => ({ op: "cmp", cmp: c, a, b });
    const cases: [string, string, unknown][] = [
      ["Key.score >= 0.5", 'Pred.cmp(">=", E.key(Key.score), E.const(0.5))', cmp(">=", key(2002), num(0.5))],
      ["Key.id > 5", 'Pred.cmp(">", Key.id, 5)', cmp(">", key(1), num(5))],
      ["Key.id < 5", 'Pred.cmp("<", Key.id, 5)', cmp("<", key(1), num(5))],
      ["Key.id <= 5", 'Pred.cmp("<=", Key.id, 5)', cmp("<=", key(1), num(5))],
      ["Key.id === 5", 'Pred.cmp("==", Key.id, 5)', cmp("==", key(1), num(5))],
      ["Key.id == 5", 'Pred.cmp("==", Key.id, 5)', cmp("==", key(1), num(5))],
      ["Key.id !== 5", 'Pred.cmp("!=", Key.id, 5)', cmp("!=", key(1), num(5))],
      ["Key.score == null", 'Pred.cmp("==", Key.score, E.null())', cmp("==", key(2002), { op: "const_null" })],
      // A string key against null is its is-null test (any other comparison of it is an error).
      ["Key.country == null", "Pred.isNull(Key.country)", { op: "is_null", x: key(3001) }],
      ["null !== (Key.country)", "Pred.notNull(Key.country)", { op: "not_null", x: key(3001) }],
      ["Key.country != E.null()", 'Pred.cmp("!=", Key.country, null)', { op: "not_null", x: key(3001) }],
      ["Key.id > 1 && Key.id < 9", 'Pred.and(Pred.cmp(">", Key.id, 1), Pred.cmp("<", Key.id, 9))', {
        op: "and",
        a: cmp(">", key(1), num(1)),
        b: cmp("<", key(1), num(9)),
      }],
      ["Key.id < 2 || !(Key.id < 9)", 'Pred.or(Pred.cmp("<", Key.id, 2), Pred.not(Pred.cmp("<", Key.id, 9)))', {
        op: "or",
        a: cmp("<", key(1), num(2)),
        b: { op: "not", x: cmp("<", key(1), num(9)) },
      }],
      ["true", "Pred.const(true)", { op: "const_bool", value: true }],
      ["Key.id * P.weight > Key.score + 1", 'Pred.cmp(">", E.mul(Key.id, P.weight), E.add(Key.score, 1))', cmp(
        ">",
        { op: "mul", a: key(1), b: param(4) },
        { op: "add", a: key(2002), b: num(1) },
      )],
    ];
    for (const [natural, built, ir] of cases) {
      expect(predOf(natural), natural).toEqual(ir);
      expect(predOf(built), built).toEqual(ir);
    }
  });

  it("PredBuilders", () => {
    expect(predOf('Pred.in(Key.country, ["US", "CA"])')).toEqual({ op: "in", lhs: key(3001), list: ["US", "CA"] });
    expect(predOf("Pred.in(Key.id, [1, 2, -3])")).toEqual({ op: "in", lhs: key(1), list: [1, 2, -3] });
    expect(predOf("Pred.isNull(Key.country)")).toEqual({ op: "is_null", x: key(3001) });
    expect(predOf("Pred.notNull(P.weight)")).toEqual({ op: "not_null", x: param(4) });
    expect(predOf('Pred.regex(Key.title, "^a.b", "i")')).toEqual({
      op: "regex",
      key_id: 3002,
      pattern: { kind: "literal", value: "^a.b" },
      flags: "i",
    });
    expect(predOf("Pred.regex(Key.country, P.blocklist_regex)")).toEqual({
      op: "regex",
      key_id: 3001,
      pattern: { kind: "param", param_id: 2 },
      flags: "",
    });
    expect(predOf("Pred.and(Key.id > 1, Key.id > 2, Key.id > 3)")).toMatchObject({ op: "and", a: { op: "and" }, b: { cmp: ">" } });
  });
});

describe("expression errors", () => {
  const vmSrc = (e: string) => planWith(`${viewer}.vm({ outKey: Key.score, expr: ${e} })`);
  const filterSrc = (p: string) => planWith(`${viewer}.filter({ pred: ${p} })`);

  it("Division", () => {
    const src = vmSrc("Key.id / 2");
    expect(error(src)).toBe(`${at(src, "/ 2")} division is not supported (the plan IR has no division); multiply by a constant instead, e.g. x * 0.5`);
  });

  it("UnsupportedOperators", () => {
    for (const op of ["%", "**", "&", "|", "<<"]) {
      const src = vmSrc(`Key.id ${op} 2`);
      expect(error(src)).toMatch(new RegExp(`^${at(src, `${op} 2`)} the operator .* is not supported`));
    }
  });

  it("UnknownKeyAndParam", () => {
    let src = vmSrc("Key.idd * 2");
    expect(error(src)).toMatch(new RegExp(`^${at(src, "idd")} unknown key 'Key.idd' \\(registry/keys.toml has: id, `));
    src = vmSrc("Key.id * P.wieght");
    expect(error(src)).toMatch(new RegExp(`^${at(src, "wieght")} unknown param 'P.wieght'`));
    // Also outside expressions: a sort key, an endpoint.
    src = planWith(`${viewer}.sort({ key: Key.nope })`);
    expect(error(src)).toMatch(new RegExp(`^${at(src, "nope")} unknown key 'Key.nope'`));
    src = planWith("ctx.viewer({ endpoint: EP.redis.nowhere })");
    expect(error(src)).toMatch(new RegExp(`^${at(src, "nowhere")} unknown endpoint 'EP.redis.nowhere'`));
    src = filterSrc('Pred.in(Key.countri, ["US"])');
    expect(error(src)).toMatch(new RegExp(`^${at(src, "countri")} unknown key 'Key.countri'`));
    src = filterSrc("Pred.isNull(Key.titel)");
    expect(error(src)).toMatch(new RegExp(`^${at(src, "titel")} unknown key 'Key.titel'`));
    src = planWith("ctx.viewer({ endpoint: EP.kafka.x })");
    expect(error(src)).toMatch(new RegExp(`^${at(src, "kafka")} unknown endpoint kind 'EP.kafka'`));
  });

  it("UnknownBuilders", () => {
    let src = vmSrc("E.div(Key.id, 2)");
    expect(error(src)).toMatch(new RegExp(`^${at(src, "div")} unknown builder 'E.div'`));
    src = filterSrc("Pred.xor(true, false)");
    expect(error(src)).toMatch(new RegExp(`^${at(src, "xor")} unknown builder 'Pred.xor'`));
  });

  it("LocalAlias", () => {
    const src = planWith(`{ const w = 2; return ${viewer}.vm({ outKey: Key.score, expr: Key.id * w }); }`);
    expect(error(src)).toMatch(new RegExp(`^${at(src, "w })")} 'w' is an alias: vm's expr and filter's pred are written inline`));
  });

  it("ExpressionBuiltOutsideItsSlot", () => {
    let src = planWith(`{ const s = Key.id * 2; return ${viewer}.vm({ outKey: Key.score, expr: s }); }`);
    const ds = errors(src).map((d) => `${d.line}:${d.column} ${d.message}`);
    expect(ds).toEqual([
      `${at(src, "Key.id * 2")} Key.id is used in an expression outside vm's expr / filter's pred; natural expressions are written inline there`,
      `${at(src, "s })")} 's' is an alias: vm's expr and filter's pred are written inline with Key.*, P.*, numbers, coalesce(...), E.* and Pred.* (aliases are not supported)`,
    ]);
    src = planWith(`{ const p = Pred.cmp(">", Key.id, 1); return ${viewer}.filter({ pred: p }); }`);
    expect(errors(src)[0]!.message).toBe(`Pred.cmp(...) builds an expression: write it inline as vm's expr or filter's pred`);
  });

  it("ShorthandSlot", () => {
    const src = planWith(`{ const expr = 1; return ${viewer}.vm({ outKey: Key.score, expr }); }`);
    expect(error(src)).toBe(`${at(src, "expr })")} 'expr' is an alias: write the expression inline (expr: ...)`);
  });

  it("AliasOfTheRegistryOrBuilders", () => {
    let src = planWith(`{ const K = Key; return ${viewer}.sort({ key: K.id }); }`);
    expect(error(src)).toBe(`${at(src, "Key;")} Key can only be used as Key.<name>: aliases are not supported`);
    src = planWith(`{ const { id } = Key; return ${viewer}; }`);
    expect(error(src)).toMatch(/^\d+:\d+ Key can only be used as Key.<name>/);
    src = planWith(`{ const c = coalesce; return ${viewer}; }`);
    expect(error(src)).toMatch(/coalesce can only be used as coalesce\(a, b\)/);
    src = planWith(`{ const Key = 1; return ${viewer}; }`);
    expect(error(src)).toMatch(/'Key' is the runtime's name; a plan may not declare its own Key/);
  });

  it("RegistryNamesOnlyAsThemselves", () => {
    let src = planWith(`${viewer}.vm({ outKey: Key.score, expr: Key })`);
    expect(error(src)).toBe(`${at(src, "Key })")} Key must be used as Key.<name> inside an expression`);
    src = planWith(`{ const o = { Key }; return ${viewer}; }`);
    expect(error(src)).toBe(`${at(src, "Key }")} 'Key' would be aliased here; aliases are not supported`);
    src = planWith("ctx.viewer({ endpoint: EP.redis })");
    expect(error(src)).toBe(`${at(src, "EP.redis")} EP.redis must be followed by an endpoint name, e.g. EP.redis.redis_default`);
    // Property names that happen to be Key / P are not the registry.
    src = planWith(`{ const o = { Key: 1, P: 2 }; class C { E = 1; Pred() { return o.Key; } } new C().Pred(); return ${viewer}; }`);
    expect(errors.bind(null, src)).toThrow("expected a compile error");
  });

  it("ImportAliasesAndUnknownNames", () => {
    let src = `import { definePlan, Pred as Q } from "@ranking-dsl/runtime";\nexport default definePlan({ name: "t", build: (ctx) => ctx.viewer({ endpoint: EP.redis.redis_default }) });\n`;
    expect(error(src)).toBe(`${at(src, "Pred as Q")} 'Pred' is imported as 'Q': aliases are not supported`);
    src = `import * as rt from "@ranking-dsl/runtime";\nexport default rt.definePlan({ name: "t", build: (ctx) => ctx.viewer({ endpoint: EP.redis.redis_default }) });\n`;
    expect(error(src)).toBe(`${at(src, "* as rt")} import the names you use (import { definePlan, E, Pred } from "@ranking-dsl/runtime"); a namespace import is an alias`);
    src = `import rt, { definePlan } from "@ranking-dsl/runtime";\nexport default definePlan({ name: "t", build: (ctx) => ctx.viewer({ endpoint: EP.redis.redis_default }) });\n`;
    expect(error(src)).toBe(`${at(src, "rt,")} "@ranking-dsl/runtime" has no default export; import names: import { definePlan } from "@ranking-dsl/runtime"`);
    src = `import { definePlan, nope } from "@ranking-dsl/runtime";\nexport default definePlan({ name: "t", build: (ctx) => ctx.viewer({ endpoint: EP.redis.redis_default }) });\n`;
    expect(error(src)).toBe(`${at(src, "nope")} "@ranking-dsl/runtime" does not export 'nope'`);
  });

  it("KindMismatch", () => {
    let src = vmSrc("Key.id > 2");
    expect(error(src)).toBe(`${at(src, "Key.id > 2")} expected an expression (a number) here, found a predicate (a comparison)`);
    src = filterSrc("Key.id + 2");
    expect(error(src)).toBe(`${at(src, "Key.id + 2")} expected a predicate (a comparison) here, found an expression (a number)`);
    src = filterSrc("Key.id > 1 && Key.id");
    expect(error(src)).toBe(`${at(src, "Key.id", 1)} expected a predicate (a comparison) here, found an expression (a number)`);
  });

  it("StringsAndStringKeys", () => {
    let src = filterSrc('Key.country == "US"');
    expect(error(src)).toMatch(new RegExp(`^${at(src, '"US"')} strings are not values of expressions`));
    src = filterSrc("Key.country < null");
    expect(error(src)).toMatch(new RegExp(`^${at(src, "Key.country")} Key.country is a string key; expressions read only int and float keys`));
    src = filterSrc("Key.country == 1");
    expect(error(src)).toMatch(new RegExp(`^${at(src, "Key.country")} Key.country is a string key; expressions read only int and float keys`));
    src = vmSrc("Key.country * 2");
    expect(error(src)).toMatch(new RegExp(`^${at(src, "Key.country")} Key.country is a string key; expressions read only int and float keys`));
    src = vmSrc("P.blocklist_regex + 1");
    expect(error(src)).toMatch(/P.blocklist_regex is a string param/);
  });

  it("BuilderArguments", () => {
    const bad: [string, RegExp][] = [
      ['Pred.cmp("=>", Key.id, 1)', /Pred.cmp's first argument is one of/],
      ["Pred.cmp(op, Key.id, 1)", /Pred.cmp's first argument is one of/],
      ["Pred.in(Key.id, [])", /non-empty array literal/],
      ['Pred.in(Key.id, [1, "a"])', /only number literals or only string literals/],
      ['Pred.regex(Key.title, "x", "g")', /flags are "" or "i"/],
      ["Pred.regex(Key.title, 5)", /pattern is a string literal or a P.\* name/],
      ['Pred.regex(E.key(Key.title), "x")', /first argument is a Key.\* name/],
      ["Pred.const(1)", /Pred.const takes true or false/],
      ["Pred.not(Key.id > 1, Key.id > 2)", /Pred.not takes 1 argument, got 2/],
      ["Math.max(1, 2) > 1", /only coalesce\(...\), E.\* and Pred.\* may be called/],
      ["`a` == Key.id", /strings are not values/],
      ["Key.id > undefined", /undefined is not a value of expressions; use null/],
    ];
    for (const [p, re] of bad) expect(error(filterSrc(p)), p).toMatch(re);
    const badExpr: [string, RegExp][] = [
      ["E.const(n)", /E.const takes a number literal/],
      ["E.key(P.weight)", /E.key takes a Key.\* name/],
      ["E.param(Key.id)", /E.param takes a P.\* name/],
      ["E.add(1)", /E.add takes 2 arguments, got 1/],
      ["coalesce(1)", /coalesce takes at least 2 arguments, got 1/],
      ["Key.id++", /unsupported syntax in an expression: PostfixUnaryExpression/],
      ["(Key.id, 2)", /the operator , is not supported/],
    ];
    for (const [e, re] of badExpr) expect(error(vmSrc(e)), e).toMatch(re);
  });

  it("SeveralErrorsAreAllReported", () => {
    const src = vmSrc("Key.a / P.b");
    expect(errors(src).map((d) => `${d.line}:${d.column} ${d.message.split(" (")[0]}`)).toEqual([
      `${at(src, "a /")} unknown key 'Key.a'`,
      `${at(src, "/ P")} division is not supported`,
      `${at(src, "b })")} unknown param 'P.b'`,
    ]);
  });
});
