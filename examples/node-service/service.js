// A taskflow external service in Node on the TypeScript SDK (sdk/typescript):
// it takes text.wordcount tasks, reports progress, and completes them with
// the text's word statistics; the SDK does the protocol of docs/protocol.md
// (consumer group wordcount-service-group, registration and heartbeat,
// claims, cancels, outcomes published in bulk).
//
//   REDIS_URL=redis://127.0.0.1:6379 TASKFLOW_NAMESPACE=taskflow node service.js
import { Service, fail } from '@taskflow/sdk';

const log = (level) => (msg, fields = {}) => {
  const kv = Object.entries(fields).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${v}`).join(' ');
  process.stderr.write(`[${level}] ${msg}${kv ? ': ' + kv : ''}\n`);
};

const svc = new Service({
  name: process.env.SERVICE_NAME || 'wordcount-service',
  consumer: process.env.CONSUMER,
  blockMs: Number(process.env.BLOCK_MS || 1000),
  logger: { info: log('INFO'), warn: log('WARN'), error: log('ERROR') },
});

svc.task('text.wordcount', {
  description: 'Counts the words of a text and lists its most frequent ones (the Node example service).',
  params: {
    type: 'object',
    properties: { text: { type: 'string', maxLength: 1 << 20, description: 'the text whose words are counted' } },
    required: ['text'],
    additionalProperties: false,
  },
  notify: 'Your word count is ready',
  handler: async (task) => {
    const text = task.params?.text;
    if (typeof text !== 'string' || text.trim() === '') throw fail('INVALID_PARAMS', 'params.text: required (a non-empty string)');
    await task.progress(0, 'counting');
    const words = text.toLowerCase().match(/[\p{L}\p{N}']+/gu) || [];
    const counts = new Map();
    for (const w of words) counts.set(w, (counts.get(w) || 0) + 1);
    const top = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 5);
    return {
      file_url: '',
      summary: `${words.length} words, ${counts.size} distinct`,
      metadata: { words: words.length, distinct: counts.size, lines: text.split('\n').length, top_words: top.map(([word, count]) => ({ word, count })) },
    };
  },
});

process.on('SIGTERM', () => svc.stop());
process.on('SIGINT', () => svc.stop());
await svc.run({ onReady: () => process.stdout.write(`ready ${svc.consumer}\n`) });
