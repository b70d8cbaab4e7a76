// The service SDK: an external service of taskflow in Node, over Redis
// Streams (docs/protocol.md is the contract; extsvc/ is the Go SDK this one
// mirrors). A Service registers its task types (with their params schema,
// description and notification text), reads task.create in its consumer
// group `<name>-group` as many at a time as it has free slots, runs each
// task's handler, and publishes the outcomes of the tasks that finished
// meanwhile in one pipeline followed by one XACK of their entries (the
// protocol's fast form). It heartbeats its registration and its held
// entries, claims the entries of dead consumers, follows task.cancel, and
// enforces each attempt's timeout.

import { createHash, randomUUID } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

import { keys, type Keys } from './keys.js';

/** A JSON Schema object describing a task type's params (docs/protocol.md, "Publishing a task type"). */
export type ParamsSchema = {
  type: 'object';
  properties?: Record<string, unknown>;
  required?: string[];
  additionalProperties?: boolean;
  [keyword: string]: unknown;
};

/** What a handler returns: the task's result, a JSON object (by convention file_url, summary, metadata). */
export type TaskResult = { file_url?: string; summary?: string; metadata?: Record<string, unknown>; [field: string]: unknown };

/** A task type's handler: return the result, or throw (a TaskFailure chooses the code and whether the agent retries). */
export type Handler<P = Record<string, unknown>> = (task: Task<P>) => Promise<TaskResult | void> | TaskResult | void;

/** A task type this service takes. */
export interface TaskTypeOptions<P = Record<string, unknown>> {
  /** What the type does, for people and agents (GET /api/v1/task-types, the dashboard, MCP tools). */
  description?: string;
  /** The params' JSON Schema: the API refuses a submit that breaks it with a 422 naming the field. */
  params?: ParamsSchema;
  /** The session's notification when a task completes; `{field}` is replaced by params.field. */
  notify?: string;
  /** Runs one task. */
  handler: Handler<P>;
}

/** Where the SDK's lifecycle lines go. Default: nowhere. */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** A Service's configuration; every field has a default. */
export interface ServiceOptions {
  /** The service's name: its consumer group is `<name>-group`, and it signs completed_by/failed_by. Required. */
  name: string;
  /** Redis: a URL, or an ioredis client the caller owns (the SDK duplicates it for its blocking reads). Default: REDIS_URL, else redis://127.0.0.1:6379. */
  redis?: string | Redis;
  /** The deployment's key namespace. Default: TASKFLOW_NAMESPACE, else "taskflow". */
  namespace?: string;
  /** This process's consumer name. Default `<name>-worker-<host>-<pid>`. */
  consumer?: string;
  /** Tasks run at once (also what the service publishes as its concurrency). Default 5. */
  concurrency?: number;
  /** How long one read waits for new entries, ms. Default 1000. */
  blockMs?: number;
  /** How often held entries are touched and the registration renewed, ms. Default 2000. */
  heartbeatMs?: number;
  /** How long an entry may go untouched before it is claimed from its (dead) holder, ms. Default 15000; must exceed 2×heartbeatMs. */
  claimIdleMs?: number;
  /** On stop, how long running tasks get to finish before they are aborted and left for another worker, ms. Default 30000. */
  graceMs?: number;
  /** How long published events are kept (XADD MINID), ms. Default 7 days. */
  retentionMs?: number;
  /** A directory shared with the API processes (TASKFLOW_ARTIFACT_DIR) for result files over 8 MiB. Default: TASKFLOW_ARTIFACT_DIR, else none (such files are refused). */
  artifactDir?: string;
  /** Abort a task's signal when its attempt's timeout passes and report TIMEOUT (retryable). Default true. */
  enforceTimeout?: boolean;
  /** Lifecycle lines. Default: none. */
  logger?: Logger;
}

/** A failure a handler throws to choose its error code, details and whether the agent retries. */
export class TaskFailure extends Error {
  readonly code: string;
  readonly retryable: boolean;
  readonly details: Record<string, unknown>;
  constructor(code: string, message: string, opts: { retryable?: boolean; details?: Record<string, unknown> } = {}) {
    super(message);
    this.name = 'TaskFailure';
    this.code = code;
    this.retryable = opts.retryable ?? false;
    this.details = opts.details ?? {};
  }
}

/** fail returns a TaskFailure to throw: `throw fail('INSUFFICIENT_DATA', 'no rows', false)`. */
export function fail(code: string, message: string, retryable = false, details?: Record<string, unknown>): TaskFailure {
  return new TaskFailure(code, message, { retryable, details });
}

/** Why a task's signal was aborted: signal.reason is one of these. */
export class TaskCancelled extends Error {
  constructor() {
    super('task cancelled by the agent');
    this.name = 'TaskCancelled';
  }
}
export class TaskTimedOut extends Error {
  constructor(seconds: number) {
    super(`task exceeded its timeout of ${seconds} seconds`);
    this.name = 'TaskTimedOut';
  }
}
class ServiceStopping extends Error {
  constructor() {
    super('service stopping');
    this.name = 'ServiceStopping';
  }
}

/** The most a result file kept in Redis may hold; a larger one needs artifactDir. */
export const MAX_FILE_BYTES = 8 << 20;
const DAY_MS = 24 * 3600 * 1000;
const ARTIFACT_TTL_MS = 7 * DAY_MS;
const ARTIFACT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const TASK_TYPE = /^[a-z][a-z0-9._-]{0,63}$/;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
/** The most outcomes one flush writes (one pipeline of XADDs, then one XACK). */
const MAX_FLUSH = 256;

/** One task handed to a handler. */
export class Task<P = Record<string, unknown>> {
  /** The task's id. */
  readonly id: string;
  readonly type: string;
  readonly sessionId: string;
  /** The task's params (checked against the type's schema by the API when one is published). */
  readonly params: P;
  /** The attempt's deadline in seconds (0: none). */
  readonly timeout: number;
  readonly priority: string;
  /** Dispatches of the task, from 1. */
  readonly attempt: number;
  /** When the agent published the attempt. */
  readonly createdAt: Date;
  /** task.create's W3C trace context, when the task is traced; its trace id is `traceId`. */
  readonly traceparent?: string;
  readonly traceId?: string;
  /** Aborted when the agent cancels the task, its timeout passes, or the service stops past its grace; reason says which. */
  readonly signal: AbortSignal;

  /** @internal */
  readonly token: string;
  /** @internal */
  readonly entryId: string;
  /** @internal */
  readonly started: number;
  #svc: Service;

  /** @internal */
  constructor(svc: Service, entryId: string, d: CreateData, createdAt: Date, signal: AbortSignal) {
    this.#svc = svc;
    this.entryId = entryId;
    this.id = d.task_id;
    this.type = d.task_type;
    this.sessionId = d.session_id ?? '';
    this.params = (d.params ?? {}) as P;
    this.timeout = typeof d.timeout === 'number' ? d.timeout : 0;
    this.priority = d.priority ?? 'normal';
    this.attempt = typeof d.attempt === 'number' ? d.attempt : 1;
    this.createdAt = createdAt;
    this.token = d.token ?? '';
    const tp = typeof d.traceparent === 'string' ? TRACEPARENT.exec(d.traceparent) : null;
    if (tp && !/^0+$/.test(tp[1]!) && !/^0+$/.test(tp[2]!)) {
      this.traceparent = d.traceparent;
      this.traceId = tp[1];
    }
    this.signal = signal;
    this.started = Date.now();
  }

  /** progress publishes task.progress: percent done (0–100), a short message, and the seconds left when known. */
  async progress(percent: number, message = '', etaSeconds?: number): Promise<void> {
    const svc = this.#svc;
    const data: Record<string, unknown> = {
      task_id: this.id, percent: Math.max(0, Math.min(100, percent)), message,
      reported_by: svc.name, token: this.token,
    };
    if (etaSeconds !== undefined && etaSeconds > 0) data.eta_seconds = etaSeconds;
    await svc.redis.xadd(...svc.xaddArgs(svc.keys.progress, 'task.progress', data));
  }

  /**
   * putFile stores data as this task's result file `name` (one path segment:
   * 1–128 of A-Z a-z 0-9 . _ -, not starting with a dot) in taskflow's
   * artifact store and returns the URL the API serves it at to the task's
   * session: put it in the result's file_url. Up to 8 MiB goes into Redis;
   * a larger file into the artifact directory (refused without one). Kept
   * 7 days; storing the same name again replaces it.
   */
  async putFile(name: string, contentType: string, data: Uint8Array | string): Promise<string> {
    const svc = this.#svc;
    if (!ARTIFACT_NAME.test(name)) {
      throw new TypeError(`file name ${JSON.stringify(name)}: want 1 to 128 of A-Z a-z 0-9 . _ -, not starting with a dot`);
    }
    if (!ARTIFACT_NAME.test(this.id)) throw new TypeError(`task id ${JSON.stringify(this.id)} cannot name a file`);
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    const fields: (string | Buffer)[] = [
      'content_type', contentType || 'application/octet-stream',
      'size', String(bytes.length),
      'sha256', createHash('sha256').update(bytes).digest('hex'),
    ];
    if (bytes.length <= MAX_FILE_BYTES) {
      fields.push('data', bytes);
    } else {
      if (!svc.artifactDir) {
        throw new TaskFailure('FILE_TOO_LARGE',
          `${name} is ${bytes.length} bytes; the store keeps up to ${MAX_FILE_BYTES} without an artifact directory (TASKFLOW_ARTIFACT_DIR)`);
      }
      const dir = join(svc.artifactDir, this.id);
      await mkdir(dir, { recursive: true, mode: 0o755 });
      const tmp = join(dir, `.tmp-${randomUUID()}`);
      await writeFile(tmp, bytes, { mode: 0o644 });
      await rename(tmp, join(dir, name)); // a reader sees the old file or the new one, whole
      fields.push('location', 'dir');
    }
    const key = svc.keys.artifact(this.id, name);
    const res = await svc.redis.multi().del(key).hset(key, ...fields).pexpire(key, ARTIFACT_TTL_MS).exec();
    const failed = res?.find(([err]) => err);
    if (!res || failed) throw new Error(`store file ${name}: ${failed?.[0]?.message ?? 'transaction aborted'}`);
    return `/api/v1/results/${this.id}/files/${name}`;
  }
}

/** task.create's data (docs/protocol.md). */
interface CreateData {
  task_id: string;
  task_type: string;
  params?: unknown;
  session_id?: string;
  timeout?: number;
  priority?: string;
  attempt?: number;
  token?: string;
  traceparent?: string;
}

interface Outcome {
  stream: string;
  args: (string | number)[];
  entryId: string;
  done: (published: boolean) => void;
}

interface Running {
  taskId: string;
  abort: AbortController;
}

type Entry = [id: string, fields: string[] | null];

const silent: Logger = { info() {}, warn() {}, error() {} };

/**
 * Service is one instance of an external service. Register its task types
 * with task(), then run() it; stop() (or the signal given to run) ends it
 * gracefully.
 */
export class Service {
  readonly name: string;
  readonly namespace: string;
  readonly consumer: string;
  readonly group: string;
  readonly concurrency: number;
  /** @internal */
  readonly keys: Keys;
  /** @internal commands (and pipelines); the blocking reads use duplicates */
  readonly redis: Redis;
  /** @internal */
  readonly artifactDir: string;

  readonly #ownRedis: boolean;
  readonly #blockMs: number;
  readonly #heartbeatMs: number;
  readonly #claimIdleMs: number;
  readonly #graceMs: number;
  readonly #retentionMs: number;
  readonly #enforceTimeout: boolean;
  readonly #log: Logger;
  readonly #types = new Map<string, TaskTypeOptions<any>>();
  readonly #inflight = new Map<string, Running>(); // entry id → task
  readonly #cancelled = new Map<string, number>(); // task id → when its cancel arrived
  readonly #tasks = new Set<Promise<void>>();
  #slotFreed: (() => void) | undefined;
  #outcomes: Outcome[] = [];
  #flushing: Promise<void> | undefined;
  #stopping = false;
  #stopWake: (() => void) | undefined;
  #running = false;

  constructor(opts: ServiceOptions) {
    const name = opts.name;
    if (!name || /[\s{}]/.test(name)) throw new TypeError(`service name ${JSON.stringify(name)}: want non-empty, without spaces or braces`);
    this.name = name;
    this.namespace = opts.namespace ?? process.env.TASKFLOW_NAMESPACE ?? 'taskflow';
    this.keys = keys(this.namespace);
    this.group = `${name}-group`;
    this.consumer = opts.consumer ?? `${name}-worker-${hostname()}-${process.pid}`;
    this.concurrency = opts.concurrency ?? 5;
    this.#blockMs = opts.blockMs ?? 1000;
    this.#heartbeatMs = opts.heartbeatMs ?? 2000;
    this.#claimIdleMs = opts.claimIdleMs ?? 15000;
    this.#graceMs = opts.graceMs ?? 30000;
    this.#retentionMs = opts.retentionMs ?? 7 * DAY_MS;
    this.#enforceTimeout = opts.enforceTimeout ?? true;
    this.artifactDir = opts.artifactDir ?? process.env.TASKFLOW_ARTIFACT_DIR ?? '';
    this.#log = opts.logger ?? silent;
    const problem =
      !Number.isInteger(this.concurrency) || this.concurrency < 1 ? `concurrency ${this.concurrency} must be an integer ≥ 1`
      : !(this.#blockMs >= 1) ? `blockMs ${this.#blockMs} must be ≥ 1`
      : !(this.#heartbeatMs > 0) ? `heartbeatMs ${this.#heartbeatMs} must be positive`
      : !(this.#claimIdleMs > 2 * this.#heartbeatMs) ? `claimIdleMs ${this.#claimIdleMs} must exceed twice heartbeatMs ${this.#heartbeatMs}`
      : !(this.#graceMs >= 0) ? `graceMs ${this.#graceMs} is negative`
      : undefined;
    if (problem) throw new RangeError(`taskflow service ${name}: ${problem}`);
    if (opts.redis instanceof Redis) {
      this.redis = opts.redis;
      this.#ownRedis = false;
    } else {
      this.redis = new Redis(opts.redis ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { lazyConnect: true });
      this.#ownRedis = true;
    }
  }

  /** task registers a task type: its handler, and what the service publishes about it. Call it before run(). */
  task<P = Record<string, unknown>>(taskType: string, opts: TaskTypeOptions<P> | Handler<P>): this {
    if (!TASK_TYPE.test(taskType)) throw new TypeError(`${JSON.stringify(taskType)} is not a task type name (a-z first, then a-z 0-9 . _ -, at most 64)`);
    if (this.#types.has(taskType)) throw new Error(`task type ${taskType} registered twice`);
    if (this.#running) throw new Error('task() after run()');
    this.#types.set(taskType, typeof opts === 'function' ? { handler: opts } : opts);
    return this;
  }

  /** The registered task types, sorted. */
  get types(): string[] {
    return [...this.#types.keys()].sort();
  }

  /**
   * run serves until stop() is called or signal aborts, then stops
   * gracefully: no new reads, running tasks get graceMs to finish, their
   * outcomes are published. It resolves once stopped; it rejects when the
   * service cannot start (Redis unreachable, no task types).
   */
  async run(opts: { signal?: AbortSignal; onReady?: () => void } = {}): Promise<void> {
    if (this.#types.size === 0) throw new Error(`taskflow service ${this.name}: no task types registered`);
    if (this.#running) throw new Error(`taskflow service ${this.name}: run() called twice`);
    this.#running = true;
    const onAbort = () => this.stop();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) this.#stopping = true;
    let lastError: Error | undefined;
    const onError = (e: Error) => {
      lastError = e;
      this.#log.warn('redis', { service: this.name, err: e.message });
    };
    if (this.#ownRedis) {
      this.redis.on('error', onError);
      if (this.redis.status === 'wait') {
        try {
          await this.redis.connect();
        } catch (e) {
          this.redis.disconnect();
          throw new Error(`taskflow service ${this.name}: cannot reach Redis: ${(lastError ?? (e as Error)).message}`);
        }
      }
    }
    const reader = this.redis.duplicate(); // a blocking read holds its connection
    const cancelReader = this.redis.duplicate();
    reader.on('error', onError);
    cancelReader.on('error', onError);
    try {
      // "0": tasks published before the first start are served too.
      try {
        await this.redis.xgroup('CREATE', this.keys.create, this.group, '0', 'MKSTREAM');
      } catch (e) {
        if (!String((e as Error).message).startsWith('BUSYGROUP')) throw e;
      }
      await this.#register();
      const last = await this.redis.xrevrange(this.keys.cancel, '+', '-', 'COUNT', 1);
      const cancelFrom = last[0]?.[0] ?? '0-0';
      this.#log.info('service started', { service: this.name, consumer: this.consumer, types: this.types.join(',') });
      opts.onReady?.();

      const heartbeat = setInterval(() => void this.#heartbeat(), this.#heartbeatMs);
      const cancels = this.#cancelLoop(cancelReader, cancelFrom);
      try {
        await this.#loop(reader);
      } finally {
        await this.#drain();
        clearInterval(heartbeat);
        cancelReader.disconnect();
        await cancels;
      }
      // The registration is not deleted: other instances may still run;
      // it expires three heartbeats after the last one stops.
      this.#log.info('service stopped', { service: this.name, consumer: this.consumer });
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
      reader.disconnect();
      cancelReader.disconnect();
      if (this.#ownRedis) await this.redis.quit().catch(() => undefined);
    }
  }

  /** stop asks run() to stop gracefully; run()'s promise says when it has. */
  stop(): void {
    this.#stopping = true;
    this.#stopWake?.();
  }

  /** @internal XADD's arguments for an event on stream, trimmed to the retention. */
  xaddArgs(stream: string, type: string, data: Record<string, unknown>): [string, 'MINID', '~', string, '*', ...string[]] {
    const minId = `${Math.max(0, Date.now() - this.#retentionMs)}-0`;
    return [stream, 'MINID', '~', minId, '*',
      'event_id', randomUUID(), 'event_type', type, 'timestamp', new Date().toISOString(), 'data', JSON.stringify(data)];
  }

  // --- the read loop ---

  async #loop(reader: Redis): Promise<void> {
    let claimCursor = '0-0';
    let nextClaim = 0;
    let fails = 0;
    while (!this.#stopping) {
      const room = await this.#room();
      if (room <= 0) break;
      let entries: Entry[] = [];
      try {
        if (Date.now() >= nextClaim) {
          // Entries a dead consumer left pending, from where the last scan stopped.
          const res = (await this.redis.xautoclaim(this.keys.create, this.group, this.consumer, this.#claimIdleMs, claimCursor, 'COUNT', room)) as [string, Entry[], string[]?];
          claimCursor = res[0];
          entries = res[1] ?? [];
          if (claimCursor === '0-0') nextClaim = Date.now() + this.#claimIdleMs / 3; // scanned to the end
        }
        if (entries.length === 0) {
          const res = (await reader.xreadgroup('GROUP', this.group, this.consumer, 'COUNT', room, 'BLOCK', this.#blockMs,
            'STREAMS', this.keys.create, '>')) as [string, Entry[]][] | null;
          entries = res?.[0]?.[1] ?? [];
        }
        fails = 0;
      } catch (e) {
        if (this.#stopping) break;
        claimCursor = '0-0';
        this.#log.warn('read failed; retrying', { service: this.name, err: (e as Error).message });
        await this.#sleep(Math.min(5000, 100 * 2 ** fails++));
        continue;
      }
      const skip: string[] = [];
      for (const [id, flat] of entries) {
        if (!this.#dispatch(id, flat)) skip.push(id);
      }
      if (skip.length > 0) {
        // not this service's (another type, malformed, cancelled before it ran): acknowledged at once
        await this.redis.xack(this.keys.create, this.group, ...skip).catch((e: Error) =>
          this.#log.warn('ack failed', { service: this.name, entries: skip.length, err: e.message }));
      }
    }
  }

  /** #room is how many more tasks may start now, waiting while none may; 0 once stopping. */
  async #room(): Promise<number> {
    for (;;) {
      if (this.#stopping) return 0;
      const free = this.concurrency - this.#inflight.size;
      if (free > 0) return free;
      await new Promise<void>((resolve) => {
        this.#slotFreed = resolve;
        this.#stopWake = resolve;
      });
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.#stopWake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  /** #dispatch starts the task of an entry; false: the entry is not this service's to run (acknowledge it). */
  #dispatch(entryId: string, flat: string[] | null): boolean {
    if (flat === null) return false; // deleted while pending
    const ev: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) ev[flat[i]!] = flat[i + 1]!;
    let d: CreateData;
    try {
      d = JSON.parse(ev.data ?? '');
    } catch {
      this.#log.warn('malformed task.create entry skipped', { service: this.name, entry: entryId });
      return false;
    }
    if (ev.event_type !== 'task.create' || d === null || typeof d !== 'object' || typeof d.task_id !== 'string' || d.task_id === '') {
      this.#log.warn('malformed task.create entry skipped', { service: this.name, entry: entryId });
      return false;
    }
    const tt = this.#types.get(d.task_type);
    if (!tt) return false; // another service's type
    if (this.#inflight.has(entryId)) return true; // claimed back while it runs here
    const abort = new AbortController();
    const createdAt = new Date(ev.timestamp ?? Date.now());
    const task = new Task(this, entryId, d, Number.isNaN(createdAt.getTime()) ? new Date() : createdAt, abort.signal);
    if (this.#cancelled.has(d.task_id)) {
      abort.abort(new TaskCancelled());
      this.#inflight.set(entryId, { taskId: d.task_id, abort });
      this.#track(this.#finish(task, undefined, abort.signal.reason).finally(() => this.#release(entryId)));
      return true;
    }
    this.#inflight.set(entryId, { taskId: d.task_id, abort });
    this.#log.info('Task processing', { task_id: task.id, service: this.name, task_type: task.type, attempt: task.attempt, trace_id: task.traceId });
    this.#track(this.#run(tt, task, abort).finally(() => this.#release(entryId)));
    return true;
  }

  #track(p: Promise<void>): void {
    this.#tasks.add(p);
    void p.finally(() => this.#tasks.delete(p));
  }

  async #run(tt: TaskTypeOptions<any>, task: Task<any>, abort: AbortController): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    if (this.#enforceTimeout && task.timeout > 0) {
      timer = setTimeout(() => abort.abort(new TaskTimedOut(task.timeout)), task.timeout * 1000);
    }
    let result: unknown;
    let err: unknown;
    try {
      // The handler's outcome, or the signal's reason when it gives up
      // first: a handler that ignores its signal does not hold the slot.
      result = await Promise.race([
        Promise.resolve().then(() => tt.handler(task)),
        new Promise((_, reject) => {
          if (abort.signal.aborted) reject(abort.signal.reason);
          abort.signal.addEventListener('abort', () => reject(abort.signal.reason), { once: true });
        }),
      ]);
    } catch (e) {
      err = e;
    } finally {
      clearTimeout(timer);
    }
    if (abort.signal.aborted && abort.signal.reason instanceof ServiceStopping) {
      // Left pending: another worker claims it after claimIdleMs.
      this.#log.info('task left for another worker (stopping)', { task_id: task.id, service: this.name });
      return;
    }
    if (err !== undefined && abort.signal.aborted) err = abort.signal.reason;
    await this.#finish(task, result, err);
  }

  #release(entryId: string): void {
    this.#inflight.delete(entryId);
    const wake = this.#slotFreed;
    this.#slotFreed = undefined;
    wake?.();
  }

  /** #finish publishes the task's outcome (through the flusher) and resolves once it is written and its entry acknowledged. */
  async #finish(task: Task<any>, result: unknown, err: unknown): Promise<void> {
    const duration = Date.now() - task.started;
    const echo = task.traceparent !== undefined ? { traceparent: task.traceparent } : {};
    if (err === undefined) {
      const res = result === undefined || result === null ? {} : result;
      if (typeof res !== 'object' || Array.isArray(res)) {
        err = new TaskFailure('INTERNAL_ERROR', `the handler's result is not a JSON object (${Array.isArray(res) ? 'an array' : typeof res})`);
      } else {
        const data = { task_id: task.id, status: 'success', result: res, duration_ms: duration, completed_by: this.name, token: task.token, ...echo };
        let args: (string | number)[];
        try {
          args = this.xaddArgs(this.keys.completed, 'task.completed', data);
        } catch (e) {
          err = new TaskFailure('INTERNAL_ERROR', `the handler's result cannot be encoded as JSON: ${(e as Error).message}`);
          args = [];
        }
        if (err === undefined) {
          this.#log.info('Task completed', { task_id: task.id, service: this.name, duration, trace_id: task.traceId });
          return this.#publish(this.keys.completed, args, task);
        }
      }
    }
    const error = errorInfo(err);
    this.#log.error('Task failed', { task_id: task.id, service: this.name, error: error.code, trace_id: task.traceId });
    const data = { task_id: task.id, status: 'failed', error, duration_ms: duration, failed_by: this.name, token: task.token, ...echo };
    return this.#publish(this.keys.failed, this.xaddArgs(this.keys.failed, 'task.failed', data), task);
  }

  #publish(stream: string, args: (string | number)[], task: Task<any>): Promise<void> {
    return new Promise<boolean>((done) => {
      this.#outcomes.push({ stream, args, entryId: task.entryId, done });
      this.#flushing ??= this.#flushLoop();
    }).then((published) => {
      if (!published) this.#log.error('cannot publish outcome; the entry stays pending for a retry', { task_id: task.id, service: this.name });
    });
  }

  /**
   * #flushLoop writes the outcomes gathered meanwhile (up to 256) in one
   * pipeline of XADDs, then, once those replies are in, one XACK of the
   * entries whose outcome was written — never an entry before its outcome
   * (docs/protocol.md, step 7, in bulk).
   */
  async #flushLoop(): Promise<void> {
    try {
      while (this.#outcomes.length > 0) {
        const batch = this.#outcomes.splice(0, MAX_FLUSH);
        const pl = this.redis.pipeline();
        for (const o of batch) pl.xadd(...(o.args as [string, ...string[]]));
        let replies: [Error | null, unknown][] = [];
        try {
          replies = (await pl.exec()) ?? [];
        } catch (e) {
          this.#log.warn('outcomes not published', { service: this.name, outcomes: batch.length, err: (e as Error).message });
        }
        const ok = batch.map((_, i) => replies[i] !== undefined && replies[i]![0] === null);
        const ids = batch.filter((_, i) => ok[i]).map((o) => o.entryId);
        if (ids.length > 0) {
          // Published: should the XACK fail, the entries are claimed and run
          // again after claimIdleMs, and the agent applies the first outcome only.
          await this.redis.xack(this.keys.create, this.group, ...ids).catch((e: Error) =>
            this.#log.warn('ack failed', { service: this.name, entries: ids.length, err: e.message }));
        }
        batch.forEach((o, i) => o.done(ok[i]!));
      }
    } finally {
      this.#flushing = undefined;
    }
  }

  /** #drain lets running tasks finish within graceMs, then aborts the rest (left for another worker). */
  async #drain(): Promise<void> {
    if (this.#tasks.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.#graceMs)));
      await Promise.race([Promise.allSettled([...this.#tasks]), grace]);
      clearTimeout(timer);
      for (const r of this.#inflight.values()) r.abort.abort(new ServiceStopping());
      await Promise.allSettled([...this.#tasks]);
    }
    await this.#flushing;
  }

  // --- registration, heartbeat, cancels ---

  async #register(): Promise<void> {
    const ttl = Math.max(1000, 3 * this.#heartbeatMs);
    const now = Date.now();
    const pl = this.redis.pipeline()
      .sadd(this.keys.services, this.name)
      .hset(this.keys.service(this.name), 'types', this.types.join(','), 'consumer', this.consumer, 'heartbeat_ms', String(now),
        // this instance's share of its types' in-flight bound, until it stops heartbeating
        `concurrency:${this.consumer}`, `${this.concurrency} ${now + ttl}`)
      .pexpire(this.keys.service(this.name), ttl);
    for (const [type, tt] of this.#types) {
      if (tt.description === undefined && tt.params === undefined && tt.notify === undefined) continue;
      const spec: Record<string, unknown> = { service: this.name };
      if (tt.description !== undefined) spec.description = tt.description;
      if (tt.params !== undefined) spec.params_schema = tt.params;
      if (tt.notify !== undefined) spec.notify = tt.notify;
      pl.hset(this.keys.taskTypes, type, JSON.stringify(spec));
    }
    const res = await pl.exec();
    const failed = res?.find(([err]) => err);
    if (failed) throw new Error(`taskflow service ${this.name}: register: ${failed[0]!.message}`);
  }

  async #heartbeat(): Promise<void> {
    const ids = [...this.#inflight.keys()];
    const hourAgo = Date.now() - 3600_000;
    for (const [id, at] of this.#cancelled) if (at < hourAgo) this.#cancelled.delete(id);
    try {
      // Touch the held entries so that no other worker claims them.
      if (ids.length > 0) await this.redis.xclaim(this.keys.create, this.group, this.consumer, 0, ...ids, 'JUSTID');
      await this.#register();
    } catch (e) {
      if (!this.#stopping) this.#log.warn('heartbeat failed', { service: this.name, err: (e as Error).message });
    }
  }

  /** #cancelLoop follows task.cancel without a group (every worker sees every request) and aborts the matching running task. */
  async #cancelLoop(reader: Redis, from: string): Promise<void> {
    while (!this.#stopping) {
      let res: [string, Entry[]][] | null;
      try {
        res = (await reader.xread('COUNT', 100, 'BLOCK', this.#blockMs, 'STREAMS', this.keys.cancel, from)) as [string, Entry[]][] | null;
      } catch (e) {
        if (this.#stopping) return;
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      for (const [id, flat] of res?.[0]?.[1] ?? []) {
        from = id;
        if (!flat) continue;
        const i = flat.indexOf('data');
        let taskId: unknown;
        try {
          taskId = JSON.parse(flat[i + 1] ?? '')?.task_id;
        } catch {
          continue;
        }
        if (typeof taskId !== 'string') continue;
        this.#cancelled.set(taskId, Date.now());
        for (const r of this.#inflight.values()) {
          if (r.taskId === taskId && !r.abort.signal.aborted) r.abort.abort(new TaskCancelled());
        }
      }
    }
  }
}

/** errorInfo is task.failed's error object for what a handler threw. Errors are told apart by name, so that a
 * TaskFailure from another copy of the SDK (two versions in one program) still chooses its code. */
function errorInfo(err: unknown): { code: string; message: string; details: Record<string, unknown>; retryable: boolean } {
  const e = err as Partial<TaskFailure> | undefined;
  if (err instanceof Error && e?.name === 'TaskFailure' && typeof e.code === 'string') {
    return { code: e.code, message: err.message, details: e.details ?? {}, retryable: e.retryable === true };
  }
  if (err instanceof Error && err.name === 'TaskCancelled') return { code: 'CANCELLED', message: "cancelled at the agent's request", details: {}, retryable: false };
  if (err instanceof Error && err.name === 'TaskTimedOut') return { code: 'TIMEOUT', message: err.message, details: {}, retryable: true };
  if (err instanceof Error) return { code: 'INTERNAL_ERROR', message: err.message, details: { name: err.name }, retryable: false };
  return { code: 'INTERNAL_ERROR', message: String(err), details: {}, retryable: false };
}
