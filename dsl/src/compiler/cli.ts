// dslc: the plan compiler's command line.
//
//   dslc build <file.plan.ts>... --out <dir> [--check] [--timeout-ms N]
//
// Writes <dir>/<plan_name>.plan.json for each plan. With --check nothing is
// written: it exits 1 when a file in <dir> differs from what its source
// compiles to, or when <dir> holds a .plan.json that no given source
// produces (CI's guard that committed JSON is current).
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { formatDiagnostic } from "./analyze.js";
import { CompileError, compileFile, TOOL_VERSION, type CompiledPlan } from "./compile.js";

const USAGE = `usage: dslc build <file.plan.ts>... --out <dir> [--check] [--timeout-ms N]
       dslc version

Compiles plan files (in any folder) to <dir>/<plan_name>.plan.json.
  --out DIR        where the JSON plans go (created if missing)
  --check          write nothing; exit 1 if a JSON plan in DIR is missing or differs,
                   or DIR holds a .plan.json that none of the files produces
  --timeout-ms N   longest a plan may run in the sandbox (default 5000)
`;

export interface Io {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  cwd: string;
}

const defaultIo: Io = {
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
  cwd: process.cwd(),
};

/** Runs dslc with its arguments; returns the exit code (0 ok, 1 failed, 2 usage). */
export function main(argv: string[], io: Io = defaultIo): number {
  const [cmd, ...rest] = argv;
  if (cmd === "version" || cmd === "--version") {
    io.stdout(`dslc ${TOOL_VERSION}\n`);
    return 0;
  }
  if (cmd === "help" || cmd === "--help" || cmd === "-h") {
    io.stdout(USAGE);
    return 0;
  }
  if (cmd !== "build") {
    io.stderr(cmd === undefined ? USAGE : `dslc: unknown command ${JSON.stringify(cmd)}\n${USAGE}`);
    return 2;
  }
  const files: string[] = [];
  let out: string | undefined;
  let check = false;
  let timeoutMs: number | undefined;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (a === "--out") {
      out = rest[++i];
      if (out === undefined) return usage(io, "--out needs a directory");
    } else if (a === "--check") {
      check = true;
    } else if (a === "--timeout-ms") {
      timeoutMs = Number(rest[++i]);
      if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) return usage(io, "--timeout-ms needs a positive integer");
    } else if (a.startsWith("-")) {
      return usage(io, `unknown flag ${a}`);
    } else {
      files.push(a);
    }
  }
  if (files.length === 0) return usage(io, "no plan files given");
  if (out === undefined) return usage(io, "--out is required");
  const outDir = resolve(io.cwd, out);

  let failed = false;
  const compiled: { file: string; plan: CompiledPlan }[] = [];
  for (const f of files) {
    const file = resolve(io.cwd, f);
    const shown = relative(io.cwd, file) || file;
    try {
      const plan = compileFile(file, { timeoutMs });
      const clash = compiled.find((c) => c.plan.name === plan.name);
      if (clash) {
        io.stderr(`${shown}:1:1: error: plan name '${plan.name}' is also the name of ${relative(io.cwd, clash.file)}\n`);
        failed = true;
        continue;
      }
      compiled.push({ file, plan });
    } catch (e) {
      failed = true;
      if (e instanceof CompileError) {
        for (const d of e.diagnostics) io.stderr(formatDiagnostic({ ...d, file: relative(io.cwd, d.file) || d.file }) + "\n");
      } else {
        io.stderr(`${shown}: internal error: ${(e as Error).stack ?? String(e)}\n`);
      }
    }
  }
  if (failed) return 1;

  if (check) {
    let stale = 0;
    for (const { file, plan } of compiled) {
      const target = join(outDir, `${plan.name}.plan.json`);
      const current = existsSync(target) ? readFileSync(target, "utf8") : undefined;
      if (current !== plan.json) {
        stale++;
        io.stderr(
          `${relative(io.cwd, target)}: ${current === undefined ? "missing" : "differs from"} what ${relative(io.cwd, file)} compiles to; run make plans and commit\n`,
        );
      }
    }
    // A JSON plan no given source produces is a leftover (its source was
    // deleted or renamed): the engine would still load it. Only --check looks;
    // a build never deletes files in a folder it was pointed at.
    const produced = new Set(compiled.map(({ plan }) => `${plan.name}.plan.json`));
    let present: string[] = [];
    try {
      present = readdirSync(outDir).filter((f) => f.endsWith(".plan.json")).sort();
    } catch {
      // no such directory: every plan was reported missing above
    }
    for (const f of present) {
      if (produced.has(f)) continue;
      stale++;
      io.stderr(`${relative(io.cwd, join(outDir, f))}: no given source compiles to it (left from a deleted or renamed plan?); delete it, or name its source too\n`);
    }
    if (stale > 0) return 1;
    io.stdout(`dslc: ${compiled.length} plan(s) current in ${relative(io.cwd, outDir) || "."}\n`);
    return 0;
  }
  for (const { plan } of compiled) {
    const target = join(outDir, `${plan.name}.plan.json`);
    try {
      mkdirSync(outDir, { recursive: true });
      writeFileSync(target, plan.json);
    } catch (e) {
      io.stderr(`dslc: cannot write ${relative(io.cwd, target)}: ${(e as Error).message}\n`);
      return 1;
    }
    io.stdout(`dslc: wrote ${relative(io.cwd, target)}\n`);
  }
  return 0;
}

function usage(io: Io, msg: string): number {
  io.stderr(`dslc: ${msg}\n${USAGE}`);
  return 2;
}
