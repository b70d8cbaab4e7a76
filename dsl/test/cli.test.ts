// dslc build: plan files from any folder, one JSON per plan named after it,
// --check for CI, and errors as file:line:column on stderr.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { main } from "../src/compiler/cli.js";
import { planWith } from "./helpers.js";

const pkg = resolve(import.meta.dirname, "..");

function dslc(args: string[], cwd: string) {
  let out = "";
  let err = "";
  const code = main(args, { stdout: (s) => (out += s), stderr: (s) => (err += s), cwd });
  return { code, out, err };
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "dslc-"));
});

const named = (name: string, body = "ctx.viewer({ endpoint: EP.redis.redis_default })") => planWith(body).replace('name: "t"', `name: "${name}"`);

describe("dslc", () => {
  it("BuildsPlansFromAnyFolderNamedAfterThePlan", () => {
    mkdirSync(join(dir, "a", "deep"), { recursive: true });
    writeFileSync(join(dir, "a", "deep", "whatever.plan.ts"), named("first_plan"));
    writeFileSync(join(dir, "second.ts"), named("second_plan", "ctx.viewer({ endpoint: EP.redis.redis_default }).take({ count: 2 })"));
    const r = dslc(["build", "a/deep/whatever.plan.ts", "second.ts", "--out", "out/json"], dir);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toBe("dslc: wrote out/json/first_plan.plan.json\ndslc: wrote out/json/second_plan.plan.json\n");
    expect(readdirSync(join(dir, "out", "json")).sort()).toEqual(["first_plan.plan.json", "second_plan.plan.json"]);
    expect(JSON.parse(readFileSync(join(dir, "out", "json", "second_plan.plan.json"), "utf8")).nodes[1].op).toBe("core::take");
  });

  it("CheckPassesWhenCurrentAndFailsWhenStaleOrMissing", () => {
    writeFileSync(join(dir, "p.plan.ts"), named("p"));
    expect(dslc(["build", "p.plan.ts", "--out", "."], dir).code).toBe(0);
    const ok = dslc(["build", "p.plan.ts", "--out", ".", "--check"], dir);
    expect(ok).toEqual({ code: 0, out: "dslc: 1 plan(s) current in .\n", err: "" });

    writeFileSync(join(dir, "p.plan.ts"), named("p", "ctx.viewer({ endpoint: EP.redis.redis_default }).take({ count: 1 })"));
    const before = readFileSync(join(dir, "p.plan.json"), "utf8");
    const stale = dslc(["build", "p.plan.ts", "--out", ".", "--check"], dir);
    expect(stale.code).toBe(1);
    expect(stale.err).toBe("p.plan.json: differs from what p.plan.ts compiles to; run make plans and commit\n");
    expect(readFileSync(join(dir, "p.plan.json"), "utf8")).toBe(before); // --check writes nothing

    const missing = dslc(["build", "p.plan.ts", "--out", "elsewhere", "--check"], dir);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/^elsewhere\/p.plan.json: missing/);
  });

  it("CheckFailsOnALeftoverJson", () => {
    // A .plan.json whose source is gone would still be loaded by the engine.
    writeFileSync(join(dir, "p.plan.ts"), named("p"));
    expect(dslc(["build", "p.plan.ts", "--out", "plans"], dir).code).toBe(0);
    writeFileSync(join(dir, "plans", "old.plan.json"), "{}\n");
    writeFileSync(join(dir, "plans", "tsconfig.json"), "{}\n"); // not a plan: ignored
    const r = dslc(["build", "p.plan.ts", "--out", "plans", "--check"], dir);
    expect(r).toEqual({
      code: 1,
      out: "",
      err: "plans/old.plan.json: no given source compiles to it (left from a deleted or renamed plan?); delete it, or name its source too\n",
    });
    // A plain build leaves the folder's other files alone.
    expect(dslc(["build", "p.plan.ts", "--out", "plans"], dir).code).toBe(0);
    expect(readdirSync(join(dir, "plans")).sort()).toEqual(["old.plan.json", "p.plan.json", "tsconfig.json"]);
  });

  it("ReportsErrorsOfEveryFileAndWritesNothing", () => {
    writeFileSync(join(dir, "good.plan.ts"), named("good"));
    writeFileSync(join(dir, "bad.plan.ts"), named("bad", "ctx.viewer({ endpoint: EP.redis.redis_default }).vm({ outKey: Key.score, expr: Key.id / 2 })"));
    writeFileSync(join(dir, "worse.plan.ts"), `import fs from "fs";\n` + named("worse"));
    const r = dslc(["build", "good.plan.ts", "bad.plan.ts", "worse.plan.ts", "--out", "out"], dir);
    expect(r.code).toBe(1);
    expect(r.err.split("\n").filter(Boolean)).toEqual([
      "bad.plan.ts:5:105: error: division is not supported (the plan IR has no division); multiply by a constant instead, e.g. x * 0.5",
      'worse.plan.ts:1:16: error: a plan may import only "@ranking-dsl/runtime" (found "fs")',
    ]);
    expect(() => readdirSync(join(dir, "out"))).toThrow();
  });

  it("UnwritableOutput", () => {
    writeFileSync(join(dir, "p.plan.ts"), named("p"));
    writeFileSync(join(dir, "afile"), "");
    const r = dslc(["build", "p.plan.ts", "--out", "afile"], dir);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^dslc: cannot write afile\/p.plan.json: /);
  });

  it("DuplicatePlanNames", () => {
    writeFileSync(join(dir, "a.plan.ts"), named("same"));
    writeFileSync(join(dir, "b.plan.ts"), named("same"));
    const r = dslc(["build", "a.plan.ts", "b.plan.ts", "--out", "."], dir);
    expect(r.code).toBe(1);
    expect(r.err).toBe("b.plan.ts:1:1: error: plan name 'same' is also the name of a.plan.ts\n");
  });

  it("MissingFile", () => {
    const r = dslc(["build", "nope.plan.ts", "--out", "."], dir);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^nope.plan.ts:1:1: error: cannot read the file: ENOENT/);
  });

  it("Usage", () => {
    expect(dslc([], dir).code).toBe(2);
    expect(dslc(["compile"], dir).err).toMatch(/^dslc: unknown command "compile"/);
    expect(dslc(["build", "--out", "."], dir).err).toMatch(/^dslc: no plan files given/);
    expect(dslc(["build", "x.plan.ts"], dir).err).toMatch(/^dslc: --out is required/);
    expect(dslc(["build", "x.plan.ts", "--out"], dir).err).toMatch(/^dslc: --out needs a directory/);
    expect(dslc(["build", "x.plan.ts", "--out", ".", "--fast"], dir).err).toMatch(/^dslc: unknown flag --fast/);
    expect(dslc(["build", "x.plan.ts", "--out", ".", "--timeout-ms", "0"], dir).code).toBe(2);
    expect(dslc(["version"], dir).out).toBe("dslc 0.1.0\n");
  });

  it("TimeoutFlag", () => {
    writeFileSync(join(dir, "slow.plan.ts"), named("slow", "{ const t = Date; for (let i = 0; ; i++) {} }"));
    const r = dslc(["build", "slow.plan.ts", "--out", ".", "--timeout-ms", "50"], dir);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/the plan ran longer than 50 ms/);
  });

  it("NpxDslcRunsInsideThePackage", () => {
    // The way to run it: `npx dslc` inside dsl/ (npm resolves the
    // package's own bin), on a plan file in another folder. Offline: npx
    // must find dslc here, never ask the registry for it.
    writeFileSync(join(dir, "p.plan.ts"), named("via_npx", "ctx.viewer({ endpoint: EP.redis.redis_default }).take({ count: 3 })"));
    const env = { ...process.env, npm_config_offline: "true", npm_config_update_notifier: "false", npm_config_yes: "false" };
    const r = spawnSync("npx", ["--no", "dslc", "build", join(dir, "p.plan.ts"), "--out", join(dir, "json")], {
      cwd: pkg,
      env,
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(`dslc: wrote ${relative(pkg, join(dir, "json", "via_npx.plan.json"))}\n`);
    const p = JSON.parse(readFileSync(join(dir, "json", "via_npx.plan.json"), "utf8"));
    expect(p.nodes.map((n: any) => `${n.op}:${n.params.count ?? ""}`)).toEqual(["core::viewer:", "core::take:3"]);
    const v = spawnSync("npx", ["--no", "dslc", "version"], { cwd: pkg, env, encoding: "utf8", timeout: 120_000 });
    expect(v.stdout).toBe("dslc 0.1.0\n");
  });

  it("TheInstalledBinRuns", () => {
    // bin/dslc runs the built compiler (npm test builds it first).
    writeFileSync(join(dir, "p.plan.ts"), named("via_bin"));
    const r = spawnSync(process.execPath, [join(pkg, "bin", "dslc"), "build", "p.plan.ts", "--out", "o"], { cwd: dir, encoding: "utf8" });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, "o", "via_bin.plan.json"), "utf8")).plan_name).toBe("via_bin");
    const bad = spawnSync(process.execPath, [join(pkg, "bin", "dslc"), "build"], { cwd: dir, encoding: "utf8" });
    expect(bad.status).toBe(2);
  });
});
