// What the tests share: the server scripts/run-tests.mjs started (its URL,
// admin key, Redis and namespace), and small helpers.
import { Redis } from 'ioredis';

import { Client, Service, type ServiceOptions } from '../src/index.js';
import type { Service as PackagedService } from '@taskflow/sdk';

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is unset: run the tests with \`npm test\` (scripts/run-tests.mjs starts taskflow dev)`);
  return v;
}

export const url = need('TASKFLOW_TEST_URL');
export const adminKey = need('TASKFLOW_TEST_ADMIN_KEY');
export const redisUrl = need('TASKFLOW_TEST_REDIS_URL');
export const namespace = need('TASKFLOW_TEST_NAMESPACE');

/** admin is a client acting as the deployment's admin. */
export const admin = () => new Client({ baseUrl: url, token: adminKey });

/** session opens a session and answers a client acting as it. */
export async function session(): Promise<Client> {
  return (await Client.openSession({ baseUrl: url })).client;
}

/** service returns a Service on the test server's Redis and namespace, quick to heartbeat. */
export function service(opts: Omit<ServiceOptions, 'redis' | 'namespace'>): Service {
  return new Service({ redis: redisUrl, namespace, blockMs: 100, heartbeatMs: 500, claimIdleMs: 2000, ...opts });
}

/** start runs svc in the background and resolves once it has registered; stop() ends it. */
export async function start(svc: Service | PackagedService): Promise<{ stop: () => Promise<void>; done: Promise<void> }> {
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  const done = svc.run({ onReady: ready });
  await Promise.race([isReady, done]);
  return {
    done,
    stop: async () => {
      svc.stop();
      await done;
    },
  };
}

/** redis is a plain client on the test Redis (callers quit it). */
export const redis = () => new Redis(redisUrl);

/** until polls cond every 20 ms until it holds, failing after ms with what() in the message. */
export async function until(ms: number, cond: () => boolean | Promise<boolean>, what = () => ''): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`condition not met within ${ms} ms ${what()}`);
}
