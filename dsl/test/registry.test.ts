// One source of truth: the Key/P/EP tables are generated from registry/*.toml
// (the files the Go engine embeds), and the committed output is current.
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";
import { ENDPOINTS, KEYS, MAX_FANOUT, OPS, PARAMS } from "../src/generated/registry.js";
import { DEFAULT_FANOUT, EP, Key, P } from "../src/index.js";

const pkg = resolve(import.meta.dirname, "..");
const registryDir = resolve(pkg, "..", "registry");
const gen = join(pkg, "scripts", "gen-registry.mjs");

function generate(args: string[]) {
  return spawnSync(process.execPath, [gen, ...args], { encoding: "utf8" });
}

describe("registry", () => {
  it("GeneratedFileIsCurrent", () => {
    const r = generate(["--check"]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
  });

  it("TablesMatchTheToml", () => {
    const keys = (parse(readFileSync(join(registryDir, "keys.toml"), "utf8")) as any).key;
    expect(KEYS.map((k) => [k.id, k.name, k.type])).toEqual(keys.map((k: any) => [k.key_id, k.name, k.type]));
    const params = (parse(readFileSync(join(registryDir, "params.toml"), "utf8")) as any).param;
    expect(PARAMS.map((p) => [p.id, p.name, p.type])).toEqual(params.map((p: any) => [p.param_id, p.name, p.type]));
    const eps = (parse(readFileSync(join(registryDir, "endpoints.dev.toml"), "utf8")) as any).endpoint;
    expect(ENDPOINTS.map((e) => [e.id, e.name, e.kind])).toEqual(eps.map((e: any) => [e.endpoint_id, e.name, e.kind]));
  });

  it("OpParamsMatchTheEngineCatalog", () => {
    // registry/tasks.toml is what the Go engine's catalog prints (cmd/rankd
    // TestManifestIsCurrent); the DSL's bounds and defaults are read from it.
    const tasks = (parse(readFileSync(join(registryDir, "tasks.toml"), "utf8")) as any).task as any[];
    expect(Object.keys(OPS).sort()).toEqual(tasks.map((t) => t.op).sort());
    for (const t of tasks) {
      expect(Object.keys(OPS[t.op]!), t.op).toEqual((t.param ?? []).map((p: any) => p.name));
      for (const p of t.param ?? []) {
        const info = OPS[t.op]![p.name]!;
        expect([info.type, info.required, info.nullable, info.min, info.default, info.bareDefault], `${t.op}.${p.name}`).toEqual([
          p.type, p.required, p.nullable, p.min, p.default, p.bare_default,
        ]);
        expect(info.max, `${t.op}.${p.name}`).toBe(p.max_limit === "max_fanout" ? MAX_FANOUT : p.max);
        expect(info.endpointKind, `${t.op}.${p.name}`).toBe(p.endpoint_kind);
      }
    }
    expect(OPS["core::media"]!.fanout!.max).toBe(10000);
    expect(OPS["core::follow"]!.fanout!.max).toBe(MAX_FANOUT);
    expect(DEFAULT_FANOUT).toBe(OPS["core::follow"]!.fanout!.bareDefault);
  });

  it("GeneratorFollowsAChangedCatalog", () => {
    const dir = mkdtempSync(join(tmpdir(), "registry-"));
    cpSync(registryDir, dir, { recursive: true });
    const out = join(dir, "registry.ts");
    const tasks = readFileSync(join(dir, "tasks.toml"), "utf8");
    expect(tasks).toContain("max = 10000\n");
    writeFileSync(join(dir, "tasks.toml"), tasks.replace("max = 10000\n", "max = 500\n"));
    const stale = generate(["--registry", dir, "--out", join(pkg, "src", "generated", "registry.ts"), "--check"]);
    expect(stale.status).toBe(1);
    execFileSync(process.execPath, [gen, "--registry", dir, "--out", out]);
    expect(readFileSync(out, "utf8")).toContain('fanout: { type: "int", required: true, nullable: false, min: 1, max: 500, bareDefault: 100 }');
  });

  it("SpecNamesExistBesideTheReferenceOnes", () => {
    // spec 002 writes Key.score and P.weight; the reference engine's plans use the others.
    for (const name of ["id", "score", "final_score", "model_score_1", "country", "title"]) expect(KEYS.some((k) => k.name === name), name).toBe(true);
    for (const name of ["weight", "media_age_penalty_weight", "blocklist_regex", "esr_cutoff"]) expect(PARAMS.some((p) => p.name === name), name).toBe(true);
    expect(Object.keys(Key)).toEqual(KEYS.map((k) => k.name));
    expect(Object.keys(P)).toEqual(PARAMS.map((p) => p.name));
    expect(Object.keys(EP.redis)).toContain("redis_default");
    expect(() => (Key as any).nope).toThrow("unknown key 'nope'");
    expect(() => (P as any).nope).toThrow("unknown param 'nope'");
  });

  it("GeneratorFollowsAChangedRegistry", () => {
    const dir = mkdtempSync(join(tmpdir(), "registry-"));
    cpSync(registryDir, dir, { recursive: true });
    const out = join(dir, "registry.ts");
    expect(generate(["--registry", dir, "--out", out]).status).toBe(0);
    expect(generate(["--registry", dir, "--out", out, "--check"]).status).toBe(0);
    writeFileSync(join(dir, "keys.toml"), readFileSync(join(dir, "keys.toml"), "utf8") + '\n[[key]]\nkey_id = 9001\nname = "fresh"\ntype = "float"\nnullable = true\n');
    const stale = generate(["--registry", dir, "--out", out, "--check"]);
    expect(stale.status).toBe(1);
    expect(stale.stderr).toMatch(/is stale: registry\/\*\.toml changed; run `npm run generate`/);
    execFileSync(process.execPath, [gen, "--registry", dir, "--out", out]);
    expect(readFileSync(out, "utf8")).toContain('{ id: 9001, name: "fresh", type: "float", nullable: true, writable: true, doc: "" }');
  });

  it("GeneratorRejectsBadRegistries", () => {
    const bad: [string, (s: string) => string, RegExp][] = [
      ["keys.toml", (s) => s + '\n[[key]]\nkey_id = 1\nname = "again"\ntype = "float"\n', /keys.toml: duplicate id 1/],
      ["keys.toml", (s) => s + '\n[[key]]\nkey_id = 9002\nname = "x"\ntype = "complex"\n', /key x has unknown type complex/],
      ["params.toml", (s) => s + '\n[[param]]\nparam_id = 99\nname = "bad name"\ntype = "float"\n', /param 99 has a bad name/],
      ["endpoints.prod.toml", (s) => s.replace('name = "redis_default"', 'name = "redis_prod"'), /endpoints.prod.toml: endpoint ids\/names\/kinds differ/],
      ["keys.toml", () => "[[key]\n", /keys.toml: /],
      ["tasks.toml", (s) => s.replace('max_limit = "max_fanout"', 'max_limit = "max_rows"'), /unknown max_limit "max_rows"/],
      ["tasks.toml", (s) => s.replace("max = 10000\n", ""), /core::media.fanout: give both min and max, or neither/],
      ["tasks.toml", (s) => s.replace('op = "core::take"', 'op = "core::concat"'), /tasks.toml: duplicate op core::concat/],
      ["tasks.toml", () => "schema_version = 1\n", /tasks.toml lists no ops/],
    ];
    for (const [file, edit, re] of bad) {
      const dir = mkdtempSync(join(tmpdir(), "registry-"));
      cpSync(registryDir, dir, { recursive: true });
      writeFileSync(join(dir, file), edit(readFileSync(join(dir, file), "utf8")));
      const r = generate(["--registry", dir, "--out", join(dir, "out.ts")]);
      expect(r.status, file).toBe(1);
      expect(r.stderr).toMatch(re);
    }
  });
});
