// End to end: compile every plan of plans/, seed the demo data into Redis
// under a key prefix of this run's own (taskflow seed-demo), run each plan
// with rankd for several requests, and check the candidates against the
// oracle's reading of the data and against values worked out by hand.
//
// Needs Go (to build rankd and taskflow from this checkout) and Redis at
// $TASKFLOW_TEST_REDIS_URL (default redis://127.0.0.1:6379/0). A missing one
// fails the test; it never skips.
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileFile } from "../../src/compiler/compile.js";
import { run, type Candidate, type Data } from "./oracle.js";
import { Resp } from "./resp.js";

const repo = resolve(import.meta.dirname, "..", "..", "..");
const redisURL = process.env.TASKFLOW_TEST_REDIS_URL || "redis://127.0.0.1:6379/0";
const prefix = `dsl-e2e:${process.pid}-${randomBytes(4).toString("hex")}:`;

let dir: string;
let redis: Resp;
let data: Data;
const plans = new Map<string, { file: string; plan: any }>();

function rankd(planFile: string, request: object): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(join(dir, "rankd"), ["--plan", planFile, "--redis_url", redisURL, "--key_prefix", prefix], {
    input: JSON.stringify(request),
    encoding: "utf8",
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function candidates(name: string, request: { user_id: number; param_overrides?: Record<string, number | string> }): Candidate[] {
  const r = rankd(plans.get(name)!.file, request);
  expect(r.stderr, `${name} ${JSON.stringify(request)}`).toBe("");
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout).candidates;
}

beforeAll(async () => {
  redis = await Resp.connect(redisURL);
  dir = mkdtempSync(join(tmpdir(), "dsl-e2e-"));
  execFileSync("go", ["build", "-o", dir + "/", "./cmd/rankd", "./cmd/taskflow"], { cwd: repo, stdio: "pipe" });
  const sources = (d: string) => readdirSync(d).filter((f) => f.endsWith(".plan.ts")).sort().map((f) => join(d, f));
  for (const src of [...sources(join(repo, "plans")), ...sources(join(import.meta.dirname, "plans"))]) {
    const c = compileFile(src);
    const file = join(dir, `${c.name}.plan.json`);
    writeFileSync(file, c.json);
    plans.set(c.name, { file, plan: c.plan });
  }
  execFileSync(join(dir, "taskflow"), ["seed-demo", "--redis_url", redisURL, "--key_prefix", prefix], { stdio: "pipe" });
  // Read back what was seeded: the oracle works from the data in Redis.
  data = { users: new Map(), lists: new Map() };
  let cursor = "0";
  do {
    const [next, keys] = (await redis.cmd("SCAN", cursor, "MATCH", `${prefix}*`, "COUNT", 1000)) as [string, string[]];
    cursor = next;
    for (const key of keys) {
      const name = key.slice(prefix.length);
      const type = await redis.cmd("TYPE", key);
      if (type === "hash") {
        const flat = (await redis.cmd("HGETALL", key)) as string[];
        const h: Record<string, string> = {};
        for (let i = 0; i < flat.length; i += 2) h[flat[i]!] = flat[i + 1]!;
        data.users.set(Number(name.split(":")[1]), h);
      } else if (type === "list") {
        data.lists.set(name, (await redis.cmd("LRANGE", key, 0, -1)) as string[]);
      }
    }
  } while (cursor !== "0");
});

afterAll(async () => {
  if (redis) {
    const keys = [...(data?.users.keys() ?? [])].map((id) => `${prefix}user:${id}`).concat([...(data?.lists.keys() ?? [])].map((k) => prefix + k));
    if (keys.length > 0) await redis.cmd("DEL", ...keys);
    redis.close();
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("plans run on rankd", () => {
  it("EveryExampleIsThere", () => {
    expect([...plans.keys()]).toEqual([
      ...["complex_dag", "diamond", "mixed_pipeline", "parallel_fanout", "simple_viewer", "viewer_filter"],
      // this test's own plans (test/e2e/plans): the operators the six do not use
      ...["country_rules", "regex_and_nulls", "test_ops"],
    ]);
    // The demo data arrived (the oracle would agree with an empty Redis too).
    expect(data.users.get(1)).toEqual({ country: "US" });
    expect(data.lists.get("follow:1")).toEqual(["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]);
  });

  const requests: { user_id: number; param_overrides?: Record<string, number | string> }[] = [
    { user_id: 1 },
    { user_id: 123 },
    { user_id: 2 },
    { user_id: 7 },
    { user_id: 999 },
    { user_id: 1, param_overrides: { weight: 2 } },
    { user_id: 1, param_overrides: { weight: 0.01 } },
  ];
  const regexRequests = ["^c", "^U", "x|^m", "US"].map((re) => ({ user_id: 1, param_overrides: { blocklist_regex: re } }));
  const perPlan: Record<string, typeof requests> = {
    regex_and_nulls: [...regexRequests, ...regexRequests.map((r) => ({ ...r, user_id: 123 })), { user_id: 999, param_overrides: { blocklist_regex: "." } }],
  };
  for (const name of ["simple_viewer", "viewer_filter", "parallel_fanout", "mixed_pipeline", "diamond", "complex_dag", "country_rules", "regex_and_nulls", "test_ops"]) {
    it(`MatchesTheOracle_${name}`, () => {
      for (const req of perPlan[name] ?? requests) {
        const got = candidates(name, req);
        const want = run(plans.get(name)!.plan, data, req.user_id, req.param_overrides ?? {});
        expect(got, `${name} ${JSON.stringify(req)}`).toEqual(want);
        // Field order: float keys, then string keys.
        expect(got.map((c) => Object.keys(c.fields)), `${name} field order`).toEqual(want.map((c) => Object.keys(c.fields)));
      }
    });
  }

  it("WorkedOutByHand", () => {
    const ids = (cs: Candidate[]) => cs.map((c) => c.id);
    expect(candidates("simple_viewer", { user_id: 1 })).toEqual([{ id: 1, fields: { country: "US" } }]);
    // id 1 is not > 5; user 7 is.
    expect(candidates("viewer_filter", { user_id: 1 })).toEqual([]);
    expect(candidates("viewer_filter", { user_id: 7 })).toEqual([{ id: 7, fields: { country: "US" } }]);
    const fan = candidates("parallel_fanout", { user_id: 1 });
    expect(ids(fan)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010]);
    expect(ids(candidates("diamond", { user_id: 1 }))).toEqual(ids(fan));
    expect(ids(candidates("diamond", { user_id: 123 }))).toEqual([1, 2, 3, 4, 5, 1021, 1022, 1023, 1024, 1025]);
    // score = id * coalesce(weight, 0.5); every followed id passes >= 0.5.
    const mixed = candidates("mixed_pipeline", { user_id: 1 });
    expect(ids(mixed)).toEqual([10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
    expect(mixed[0]).toEqual({ id: 10, fields: { score: 5, country: "CA" } });
    expect(mixed[9]).toEqual({ id: 1, fields: { score: 0.5, country: "US" } });
    // With weight 0.01 only ids whose score reaches 0.5 remain: none of 1..10 (max 0.1).
    expect(candidates("mixed_pipeline", { user_id: 1, param_overrides: { weight: 0.01 } })).toEqual([]);
    // follow:1 → media of users 1 and 2 (1001..1006); recommendations have no media.
    const dag = candidates("complex_dag", { user_id: 1 });
    expect(ids(dag)).toEqual([1006, 1005, 1004, 1003, 1002, 1001]);
    expect(dag[1]).toEqual({ id: 1005, fields: { score: 100.5 } });
    expect(candidates("complex_dag", { user_id: 123 }).map((c) => c.id)).toEqual([1006, 1005, 1004, 1003, 1002, 1001]);
  });

  it("OperatorsBeyondTheExamplesByHand", () => {
    // follow:1 fanout 8 = 1..8; keep CA (2 4 6 8) or id >= 7 (7 8); score = -id + 2 - 0.5; sort by country desc.
    expect(candidates("country_rules", { user_id: 1 })).toEqual([
      { id: 7, fields: { final_score: -5.5, country: "US" } },
      { id: 2, fields: { final_score: -0.5, country: "CA" } },
      { id: 4, fields: { final_score: -2.5, country: "CA" } },
      { id: 6, fields: { final_score: -4.5, country: "CA" } },
      { id: 8, fields: { final_score: -6.5, country: "CA" } },
    ]);
    // ^c (flag i) keeps CA follows; media rows have no country and sort after the
    // recommendations' US rows; the second output is the viewer iff it has no country.
    const got = candidates("regex_and_nulls", { user_id: 1, param_overrides: { blocklist_regex: "^c" } });
    expect(got.map((c) => c.id)).toEqual([2, 4, 6, 8, 10, 1001, 1002, 1003, 1001, 1002, 1003, 1004]);
    expect(got.slice(8).every((c) => Object.keys(c.fields).length === 0)).toBe(true);
    expect(candidates("regex_and_nulls", { user_id: 999, param_overrides: { blocklist_regex: "." } })).toEqual([{ id: 999, fields: {} }]);
    expect(candidates("test_ops", { user_id: 1 })).toEqual([
      { id: 6, fields: { model_score_1: 26 } },
      { id: 5, fields: { model_score_1: 15 } },
      { id: 4, fields: { model_score_1: 6 } },
      { id: 3, fields: { model_score_1: -1 } },
    ]);
    // A regex param the request leaves unset is the engine's error, not an empty answer.
    const r = rankd(plans.get("regex_and_nulls")!.file, { user_id: 1 });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^Error: .*/);
  });

  it("CommittedPlansRunByName", () => {
    // rankd's plan store is plans/ (--plan_name): the committed JSON gives
    // the same answers as the freshly compiled one.
    for (const name of ["simple_viewer", "viewer_filter", "parallel_fanout", "mixed_pipeline", "diamond", "complex_dag"]) {
      const r = spawnSync(join(dir, "rankd"), ["--plan_dir", join(repo, "plans"), "--plan_name", name, "--redis_url", redisURL, "--key_prefix", prefix], {
        input: JSON.stringify({ user_id: 1 }),
        encoding: "utf8",
        timeout: 60_000,
      });
      expect(r.stderr, name).toBe("");
      expect(JSON.parse(r.stdout).candidates, name).toEqual(candidates(name, { user_id: 1 }));
    }
  });

  it("EngineRefusesAHandBrokenCopy", () => {
    // The compiled JSON is strict enough for the engine's fail-closed checks:
    // a hand-broken copy is refused with the engine's message.
    const broken = structuredClone(plans.get("mixed_pipeline")!.plan);
    broken.nodes[1].params.fanout = 0;
    const file = join(dir, "broken.plan.json");
    writeFileSync(file, JSON.stringify(broken));
    const r = rankd(file, { user_id: 1 });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/^Error: .*fanout/);
  });
});
