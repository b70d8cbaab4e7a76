#!/usr/bin/env node
// The SDK's version follows the API's: the package is released with
// taskflow, so on a release tag vX.Y.Z its version is X.Y.Z, and between
// releases it is the next one's with -dev (the API then reports "(devel)").
// src/version.ts's VERSION is the package's version.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = join(dirname(fileURLToPath(import.meta.url)), '..');
const { version } = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'));
const src = /VERSION = '([^']+)'/.exec(readFileSync(join(pkg, 'src/version.ts'), 'utf8'))?.[1];
const problems = [];
if (src !== version) problems.push(`src/version.ts says ${src}, package.json ${version}`);
let tag = '';
try {
  tag = execFileSync('git', ['describe', '--tags', '--exact-match', '--match', 'v[0-9]*'], { cwd: pkg, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
} catch {
  // not on a release tag
}
if (tag && version !== tag.slice(1)) problems.push(`the checkout is release ${tag}: the SDK's version must be ${tag.slice(1)}, not ${version}`);
if (!tag && !/^\d+\.\d+\.\d+-dev$/.test(version)) problems.push(`between releases the version is the next release's with -dev (e.g. 0.1.0-dev), not ${version}`);
if (problems.length > 0) {
  for (const p of problems) process.stderr.write(`sdk/typescript version: ${p}\n`);
  process.exit(1);
}
