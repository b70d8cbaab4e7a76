// The published package's shape: `npm pack` makes a tarball that installs
// into a scratch project, whose program type-checks against the packed
// declarations and runs against the test server (a service and a client
// from the one import).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { namespace, redisUrl, url } from './env.js';

// build/test/pack.test.js → the package's directory
const pkg = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

const program = `
import { Client, Service, VERSION, type TaskInfo } from '@taskflow/sdk';

const svc = new Service({ name: 'ts-packed-service', blockMs: 100 })
  .task<{ who: string }>('ts.packed', {
    description: 'Greets (the packed SDK)',
    params: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
    handler: async (task) => ({ summary: \`hello \${task.params.who}\` }),
  });
let ready!: () => void;
const started = new Promise<void>((r) => (ready = r));
const running = svc.run({ onReady: ready });
await started;
const { client } = await Client.openSession();
const sub = await client.submit('ts.packed', { who: 'tarball' });
const done: TaskInfo = await client.wait(sub.task_id, { timeoutMs: 15000 });
svc.stop();
await running;
console.log(JSON.stringify({ version: VERSION, summary: done.result?.summary }));
`;

test('npm pack installs into a project that type-checks and runs', { timeout: 180_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'taskflow-sdk-pack-'));
  try {
    const out = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: pkg, encoding: 'utf8' }).trim().split('\n').pop()!;
    const tgz = join(dir, out);
    const files = execFileSync('tar', ['-tzf', tgz], { encoding: 'utf8' }).split('\n').filter(Boolean).sort();
    assert.ok(files.includes('package/dist/index.js') && files.includes('package/dist/index.d.ts'), files.join(' '));
    assert.ok(!files.some((f) => f.includes('/test/') || f.includes('node_modules') || f.endsWith('.ts') && !f.endsWith('.d.ts')),
      `only the build and the README are published: ${files.join(' ')}`);

    const app = join(dir, 'app');
    execFileSync('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
    writeFileSync(join(app, '.npmrc'), 'omit-lockfile-registry-resolved=true\n');
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--silent', tgz], { cwd: app, stdio: 'inherit' });
    writeFileSync(join(app, 'main.ts'), program);
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, outDir: 'out',
        // the SDK's own TypeScript and Node types: nothing else to fetch
        typeRoots: [join(pkg, 'node_modules/@types')], types: ['node'],
      },
      files: ['main.ts'],
    }));
    execFileSync(process.execPath, [join(pkg, 'node_modules/typescript/bin/tsc'), '-p', app], { cwd: app, stdio: 'inherit' });
    assert.deepEqual(readdirSync(join(app, 'out')), ['main.js']);
    const res = execFileSync(process.execPath, [join(app, 'out/main.js')], {
      cwd: app, encoding: 'utf8', timeout: 60_000,
      env: { ...process.env, TASKFLOW_URL: url, REDIS_URL: redisUrl, TASKFLOW_NAMESPACE: namespace },
    });
    const line = JSON.parse(res.trim().split('\n').pop()!);
    const { version } = JSON.parse(execFileSync('node', ['-p', 'JSON.stringify(require("./package.json"))'], { cwd: pkg, encoding: 'utf8' }));
    assert.deepEqual(line, { version, summary: 'hello tarball' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
