// The runtime on its own (what the sandbox evaluates): the builders validate
// their arguments even when no static pass stands in front of them.
import { describe, expect, it } from "vitest";
import { coalesce, definePlan, E, EP, Key, P, PlanCtx, Pred } from "../src/index.js";
import { compilePlan } from "../src/runtime/plan.js";

const ir = (v: unknown) => (v as any).ir;

describe("runtime builders", () => {
  it("BuildIR", () => {
    expect(ir(E.mul(Key.id, coalesce(P.weight, 0.5)))).toEqual({
      op: "mul",
      a: { op: "key_ref", key_id: 1 },
      b: { op: "coalesce", a: { op: "param_ref", param_id: 4 }, b: { op: "const_number", value: 0.5 } },
    });
    expect(ir(Pred.cmp(">=", E.key(Key.score), E.const(0.5)))).toEqual({
      op: "cmp",
      cmp: ">=",
      a: { op: "key_ref", key_id: 2002 },
      b: { op: "const_number", value: 0.5 },
    });
    expect(ir(Pred.or(true, false))).toEqual({ op: "or", a: { op: "const_bool", value: true }, b: { op: "const_bool", value: false } });
  });

  it("RefuseBadArguments", () => {
    const bad: [() => unknown, string][] = [
      [() => E.key(5 as any), "E.key: expected Key.*, got number 5"],
      [() => E.key(P.weight as any), "E.key: expected Key.*, got P.weight"],
      [() => E.param(Key.id as any), "E.param: expected P.*, got Key.id"],
      [() => E.const("1" as any), 'E.const: expected a number, got string "1"'],
      [() => E.const(Infinity), "E.const: Infinity is not a finite number"],
      [() => E.add(Key.id, undefined as any), "E.add b: expected an expression (a number, null, Key.*, P.* or E.*), got undefined"],
      [() => E.add(Key.id, Pred.const(true) as any), "E.add b: expected an expression (a number, null, Key.*, P.* or E.*), got a predicate"],
      [() => E.mul(Key.country, 2), "E.mul a: Key.country is a string key; expressions read only int and float keys"],
      [() => E.neg(P.blocklist_regex), "E.neg: P.blocklist_regex is a string param; expressions read only int and float params"],
      [() => (coalesce as any)(1), "coalesce: needs at least two arguments"],
      [() => Pred.cmp("=>" as any, 1, 2), 'Pred.cmp: unknown comparison "=>" (use one of == != < <= > >=)'],
      [() => Pred.and(true), "Pred.and: needs at least two predicates"],
      [() => Pred.not(E.key(Key.id) as any), "Pred.not: expected a predicate (a comparison, true/false or Pred.*), got an expression"],
      [() => Pred.in(Key.id, [] as number[]), "Pred.in: the list must be a non-empty array"],
      [() => Pred.in(Key.id, [1, "a"] as any), "Pred.in: the list must hold only numbers or only strings"],
      [() => Pred.regex(5 as any, "x"), "Pred.regex: expected Key.*, got number 5"],
      [() => Pred.regex(P.blocklist_regex as any, "x"), "Pred.regex: expected Key.*, got P.blocklist_regex"],
      [() => Pred.regex(Key.title, "x", "g" as any), 'Pred.regex: flags must be "" or "i", got string "g"'],
      [() => Pred.regex(Key.title, P.weight), "Pred.regex: P.weight is a float param; a pattern param must be a string"],
      [() => Pred.regex(Key.title, 5 as any), "Pred.regex: the pattern must be a string or P.*, got number 5"],
      [() => Pred.const(1 as any), "Pred.const: expected true or false, got number 1"],
      [() => (Key as any).nope, "unknown key 'nope'"],
      [() => (EP as any).redis.nope, "unknown redis endpoint 'nope'"],
      [() => (Key.id as any) * 2, "Key.id was used as a number at run time; write natural expressions inline as the value of vm's expr or filter's pred (or use E.* / Pred.*)"],
      [() => `${E.key(Key.id)}`, "a built expression was used as a plain value at run time; write it inline as vm's expr or filter's pred"],
    ];
    for (const [f, message] of bad) expect(f, message).toThrow(message);
  });

  it("NodesOfAnotherPlan", () => {
    const other = new PlanCtx().viewer({ endpoint: EP.redis.redis_default });
    const ctxUser = definePlan({ name: "t", build: (ctx) => ctx.viewer({ endpoint: EP.redis.redis_default }).concat({ rhs: other }) });
    expect(() => compilePlan(ctxUser)).toThrow("concat: rhs belongs to another plan");
    expect(() => compilePlan(definePlan({ name: "t", build: () => other }))).toThrow("build must return nodes of its ctx (output 0 is not a node of this plan)");
    expect(() => compilePlan({ name: "t", build: () => other } as any)).toThrow("the default export is not a plan");
  });

  it("CompilePlanIsRepeatable", () => {
    const def = definePlan({ name: "t", build: (ctx) => ctx.viewer({ endpoint: EP.redis.redis_default }).take({ count: 2 }) });
    expect(compilePlan(def)).toEqual(compilePlan(def));
    expect(compilePlan(def).nodes.map((n) => n.node_id)).toEqual(["n0", "n1"]);
  });
});
