// Every Redis key the service SDK touches, built in one place
// (docs/protocol.md, "Names"). The first braces are the Redis Cluster hash
// tag: every key of a namespace lives in one slot.

export interface Keys {
  /** stream: task.create, agent → services (read in `<service>-group`) */
  create: string;
  /** stream: task.completed, service → agent */
  completed: string;
  /** stream: task.failed, service → agent */
  failed: string;
  /** stream: task.progress, service → agent */
  progress: string;
  /** stream: task.cancel, agent → services (read without a group) */
  cancel: string;
  /** set: names of services that registered */
  services: string;
  /** hash: the registration of service `name` (types, consumer, heartbeat_ms, concurrency:<consumer>) */
  service(name: string): string;
  /** hash: task type → its spec JSON */
  taskTypes: string;
  /** hash: a result file (content_type, size, sha256, data | location) */
  artifact(taskId: string, name: string): string;
}

/**
 * checkNamespace says what is wrong with a namespace (the server's rules):
 * 1 to 64 characters, no brace or white space, not ending like a
 * partition's hash tag (":p" and digits).
 */
export function checkNamespace(ns: string): string | undefined {
  if (ns.length === 0) return 'it is empty';
  if (ns.length > 64) return `${ns.length} characters, at most 64`;
  if (/[{}\s]/.test(ns)) return 'it holds a brace or white space';
  if (/:p[0-9]+$/.test(ns)) return 'it ends like a partition\'s hash tag (":p" and digits)';
  return undefined;
}

/** keys returns the protocol's keys in namespace ns (TASKFLOW_NAMESPACE). */
export function keys(ns: string): Keys {
  const bad = checkNamespace(ns);
  if (bad) throw new TypeError(`namespace ${JSON.stringify(ns)}: ${bad}`);
  const p = `{${ns}}:agent:`;
  return {
    create: p + 'stream:task.create',
    completed: p + 'stream:task.completed',
    failed: p + 'stream:task.failed',
    progress: p + 'stream:task.progress',
    cancel: p + 'stream:task.cancel',
    services: p + 'services',
    service: (name) => p + 'service:' + name,
    taskTypes: p + 'task-types',
    artifact: (taskId, name) => `${p}artifact:${taskId}:${name}`,
  };
}
