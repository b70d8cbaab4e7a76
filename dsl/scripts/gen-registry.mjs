#!/usr/bin/env node
// Generates src/generated/registry.ts from the repository's registry/*.toml,
// the same files the Go plan engine loads: one source of truth for key, param
// and endpoint ids. `--check` exits 1 when the committed file is stale.
//
// usage: node scripts/gen-registry.mjs [--check] [--registry DIR] [--out FILE]
import { readFileSync, writeFileSync, existsSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "smol-toml";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const flag = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const registryDir = resolve(flag("--registry") ?? join(here, "..", "..", "registry"));
const outFile = resolve(flag("--out") ?? join(here, "..", "src", "generated", "registry.ts"));
const check = args.includes("--check");

function fail(msg) {
  process.stderr.write(`gen-registry: ${msg}\n`);
  process.exit(1);
}

function load(name) {
  const path = join(registryDir, name);
  if (!existsSync(path)) fail(`${path} does not exist`);
  try {
    return parse(readFileSync(path, "utf8"));
  } catch (err) {
    fail(`${path}: ${err.message}`);
  }
}

const KEY_TYPES = new Set(["int", "float", "string", "feature_bundle"]);
const PARAM_TYPES = new Set(["int", "float", "string", "bool"]);
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function uniq(list, field, file) {
  const seen = new Set();
  for (const e of list) {
    if (seen.has(e[field])) fail(`${file}: duplicate ${field} ${JSON.stringify(e[field])}`);
    seen.add(e[field]);
  }
}

const keys = (load("keys.toml").key ?? []).map((k) => {
  if (!Number.isInteger(k.key_id) || k.key_id <= 0) fail(`keys.toml: bad key_id in ${JSON.stringify(k.name)}`);
  if (typeof k.name !== "string" || !NAME.test(k.name)) fail(`keys.toml: key ${k.key_id} has a bad name`);
  if (!KEY_TYPES.has(k.type)) fail(`keys.toml: key ${k.name} has unknown type ${k.type}`);
  return {
    id: k.key_id,
    name: k.name,
    type: k.type,
    nullable: k.nullable === true,
    writable: k.allow_write !== false,
    doc: String(k.doc ?? ""),
  };
});
uniq(keys, "id", "keys.toml");
uniq(keys, "name", "keys.toml");

const params = (load("params.toml").param ?? []).map((p) => {
  if (!Number.isInteger(p.param_id) || p.param_id <= 0) fail(`params.toml: bad param_id in ${JSON.stringify(p.name)}`);
  if (typeof p.name !== "string" || !NAME.test(p.name)) fail(`params.toml: param ${p.param_id} has a bad name`);
  if (!PARAM_TYPES.has(p.type)) fail(`params.toml: param ${p.name} has unknown type ${p.type}`);
  return { id: p.param_id, name: p.name, type: p.type, nullable: p.nullable === true, doc: String(p.doc ?? "") };
});
uniq(params, "id", "params.toml");
uniq(params, "name", "params.toml");

// Every environment lists the same ids with the same name and kind; the DSL
// needs only those, so it reads them all and insists that they agree.
const envFiles = readdirSync(registryDir).filter((f) => /^endpoints\..+\.toml$/.test(f)).sort();
if (envFiles.length === 0) fail(`no endpoints.*.toml in ${registryDir}`);
let endpoints;
for (const f of envFiles) {
  const list = (load(f).endpoint ?? []).map((e) => {
    if (typeof e.endpoint_id !== "string" || !/^ep_[A-Za-z0-9_]+$/.test(e.endpoint_id)) fail(`${f}: bad endpoint_id`);
    if (typeof e.name !== "string" || !NAME.test(e.name)) fail(`${f}: endpoint ${e.endpoint_id} has a bad name`);
    if (e.kind !== "redis" && e.kind !== "http") fail(`${f}: endpoint ${e.endpoint_id} has unknown kind ${e.kind}`);
    return { id: e.endpoint_id, name: e.name, kind: e.kind };
  });
  uniq(list, "id", f);
  uniq(list, "name", f);
  list.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  if (endpoints === undefined) endpoints = list;
  else if (JSON.stringify(endpoints) !== JSON.stringify(list)) fail(`${f}: endpoint ids/names/kinds differ from ${envFiles[0]}`);
}

const validation = load("validation.toml");
const planName = validation?.patterns?.plan_name ?? "^[A-Za-z0-9_]+$";
const maxFanout = validation?.limits?.max_fanout ?? 10000000;
const schemaVersion = validation?.limits?.plan_schema_version ?? 1;

// The op catalog (generated from the Go engine's catalog by
// `rankd --print-task-manifest`): each op's params with their bounds and
// defaults, so the DSL checks exactly what the engine will.
const LIMITS = { max_fanout: maxFanout };
const ops = {};
for (const t of load("tasks.toml").task ?? []) {
  if (typeof t.op !== "string" || !/^[a-z_]+::[a-z_]+$/.test(t.op)) fail(`tasks.toml: bad op ${JSON.stringify(t.op)}`);
  if (ops[t.op]) fail(`tasks.toml: duplicate op ${t.op}`);
  const ps = {};
  for (const p of t.param ?? []) {
    if (typeof p.name !== "string" || !NAME.test(p.name)) fail(`tasks.toml: ${t.op} has a param with a bad name`);
    if (ps[p.name]) fail(`tasks.toml: ${t.op} lists param ${p.name} twice`);
    const info = { type: String(p.type), required: p.required === true, nullable: p.nullable === true };
    if (p.min !== undefined) {
      if (!Number.isInteger(p.min)) fail(`tasks.toml: ${t.op}.${p.name}: min must be an integer`);
      info.min = p.min;
    }
    if (p.max_limit !== undefined) {
      if (!(p.max_limit in LIMITS)) fail(`tasks.toml: ${t.op}.${p.name}: unknown max_limit ${JSON.stringify(p.max_limit)}`);
      info.max = LIMITS[p.max_limit];
    } else if (p.max !== undefined) {
      if (!Number.isInteger(p.max)) fail(`tasks.toml: ${t.op}.${p.name}: max must be an integer`);
      info.max = p.max;
    }
    if ((info.min === undefined) !== (info.max === undefined)) fail(`tasks.toml: ${t.op}.${p.name}: give both min and max, or neither`);
    if (p.default !== undefined) info.default = p.default;
    if (p.bare_default !== undefined) info.bareDefault = p.bare_default;
    if (p.endpoint_kind !== undefined) {
      if (p.type !== "endpoint_ref" || typeof p.endpoint_kind !== "string") fail(`tasks.toml: ${t.op}.${p.name}: endpoint_kind belongs to an endpoint_ref param`);
      info.endpointKind = p.endpoint_kind;
    }
    if (p.enum !== undefined) {
      if (!Array.isArray(p.enum) || !p.enum.every((e) => typeof e === "string")) fail(`tasks.toml: ${t.op}.${p.name}: enum must list strings`);
      info.enum = p.enum;
    }
    ps[p.name] = info;
  }
  ops[t.op] = ps;
}
if (Object.keys(ops).length === 0) fail("tasks.toml lists no ops");

keys.sort((a, b) => a.id - b.id);
params.sort((a, b) => a.id - b.id);

const doc = (s) => s.replace(/\*\//g, "* /").replace(/\s+/g, " ").trim();
const lit = (v) => JSON.stringify(v);
let out = "";
out += "// Code generated by scripts/gen-registry.mjs from registry/*.toml. DO NOT EDIT.\n";
out += "// Regenerate with `npm run generate` in dsl/ (make plans does it too).\n\n";
out += `export const SCHEMA_VERSION = ${schemaVersion};\n`;
out += `export const PLAN_NAME_PATTERN = ${lit(planName)};\n`;
out += `export const MAX_FANOUT = ${maxFanout};\n\n`;
out += "export type KeyType = \"int\" | \"float\" | \"string\" | \"feature_bundle\";\n";
out += "export type ParamType = \"int\" | \"float\" | \"string\" | \"bool\";\n";
out += "export type EndpointKind = \"redis\" | \"http\";\n\n";
out += "export interface KeyInfo {\n  readonly id: number;\n  readonly name: string;\n  readonly type: KeyType;\n  readonly nullable: boolean;\n  readonly writable: boolean;\n  readonly doc: string;\n}\n";
out += "export interface ParamInfo {\n  readonly id: number;\n  readonly name: string;\n  readonly type: ParamType;\n  readonly nullable: boolean;\n  readonly doc: string;\n}\n";
out += "export interface EndpointInfo {\n  readonly id: string;\n  readonly name: string;\n  readonly kind: EndpointKind;\n}\n\n";
out += "export const KEYS: readonly KeyInfo[] = [\n";
for (const k of keys) out += `  { id: ${k.id}, name: ${lit(k.name)}, type: ${lit(k.type)}, nullable: ${k.nullable}, writable: ${k.writable}, doc: ${lit(k.doc)} },\n`;
out += "];\n\n";
out += "export const PARAMS: readonly ParamInfo[] = [\n";
for (const p of params) out += `  { id: ${p.id}, name: ${lit(p.name)}, type: ${lit(p.type)}, nullable: ${p.nullable}, doc: ${lit(p.doc)} },\n`;
out += "];\n\n";
out += "export const ENDPOINTS: readonly EndpointInfo[] = [\n";
for (const e of endpoints) out += `  { id: ${lit(e.id)}, name: ${lit(e.name)}, kind: ${lit(e.kind)} },\n`;
out += "];\n\n";
out += "/** One param of an op, as the engine's catalog declares it (registry/tasks.toml). */\n";
out += "export interface OpParamInfo {\n  readonly type: string;\n  readonly required: boolean;\n  readonly nullable: boolean;\n";
out += "  /** Inclusive bounds of an int param. */\n  readonly min?: number;\n  readonly max?: number;\n";
out += "  /** Applied by the engine when the param is absent. */\n  readonly default?: number | string | boolean;\n";
out += "  /** Applied by the engine when the plan names the op bare (the short form). */\n  readonly bareDefault?: number | string | boolean;\n";
out += "  readonly enum?: readonly string[];\n";
out += "  /** The kind of endpoint an endpoint_ref param takes. */\n  readonly endpointKind?: string;\n}\n\n";
out += "/** The engine's ops and their params, from registry/tasks.toml. */\n";
out += "export const OPS: { readonly [op: string]: { readonly [param: string]: OpParamInfo } } = {\n";
for (const op of Object.keys(ops).sort()) {
  out += `  ${lit(op)}: {\n`;
  for (const [name, info] of Object.entries(ops[op])) {
    const fields = Object.entries(info).map(([k, v]) => `${k}: ${lit(v)}`).join(", ");
    out += `    ${name}: { ${fields} },\n`;
  }
  out += "  },\n";
}
out += "};\n\n";
out += "/** The key names of the registry, for the Key table's type. */\n";
out += "export interface KeyTypes {\n";
for (const k of keys) out += `  /** ${doc(k.doc)} (key_id ${k.id}, ${k.type}${k.nullable ? ", nullable" : ""}${k.writable ? "" : ", read-only"}) */\n  ${k.name}: ${lit(k.type)};\n`;
out += "}\n\n";
out += "/** The param names of the registry, for the P table's type. */\n";
out += "export interface ParamTypes {\n";
for (const p of params) out += `  /** ${doc(p.doc)} (param_id ${p.id}, ${p.type}${p.nullable ? ", nullable" : ""}) */\n  ${p.name}: ${lit(p.type)};\n`;
out += "}\n\n";
out += "/** The endpoints of the registry by kind, then name, for the EP table's type. */\n";
out += "export interface EndpointTypes {\n";
for (const kind of [...new Set(endpoints.map((e) => e.kind))].sort()) {
  out += `  ${kind}: {\n`;
  for (const e of endpoints.filter((x) => x.kind === kind)) out += `    /** ${e.id} */\n    ${e.name}: ${lit(e.kind)};\n`;
  out += "  };\n";
}
out += "}\n";

if (check) {
  const current = existsSync(outFile) ? readFileSync(outFile, "utf8") : "";
  if (current !== out) {
    fail(`${outFile} is stale: registry/*.toml changed; run \`npm run generate\` in dsl/ and commit the result`);
  }
  process.stdout.write(`gen-registry: ${outFile} is current\n`);
} else {
  writeFileSync(outFile, out);
  process.stdout.write(`gen-registry: wrote ${outFile}\n`);
}
