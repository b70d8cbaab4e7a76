// An agent's side of taskflow's MCP server, on the official TypeScript SDK:
// connect over streamable HTTP with a session token, list the tools,
// delegate a task, keep going, be told when it finishes, fetch the result.
//
//   node client.mjs http://127.0.0.1:8080/mcp <session token> [tool] [arguments JSON]
//
// It prints one JSON line of what it saw (the Go test in
// cmd/taskflow/mcp_node_test.go reads it). docs/mcp.md walks through it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const [url, token, tool = 'noop_task_tool', rawArgs = '{}'] = process.argv.slice(2);
if (!url || !token) {
  console.error('usage: node client.mjs <mcp url> <session token> [tool] [arguments JSON]');
  process.exit(2);
}

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: 'taskflow-node-agent', version: '1.0.0' });

const notified = [];
const updated = [];
let resolveNotified;
const gotNotice = new Promise((r) => { resolveNotified = r; });
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  notified.push(n.params.data);
  resolveNotified();
});
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
  updated.push(n.params.uri);
});

await client.connect(transport);
const { tools } = await client.listTools();

// Hear of finished tasks without polling.
await client.setLoggingLevel('info');
await client.subscribeResource({ uri: 'taskflow://notifications' });

// Delegate: the answer comes at once.
const ack = await client.callTool({ name: tool, arguments: JSON.parse(rawArgs) });
if (ack.isError) {
  console.log(JSON.stringify({ error: ack.content }));
  process.exit(1);
}
const taskId = ack.structuredContent.task_id;

// ... the agent keeps talking to its user here ...

// Wait for it (progress arrives as notifications), then read the result.
const progress = [];
const done = await client.callTool(
  { name: 'wait_for_task_tool', arguments: { task_id: taskId, timeout_seconds: 30 } },
  undefined,
  { onprogress: (p) => progress.push(p.progress) },
);
await Promise.race([gotNotice, new Promise((r) => setTimeout(r, 10000))]);
const badArgs = await client.callTool({ name: 'get_task_result_tool', arguments: {} });

console.log(JSON.stringify({
  tools: tools.map((t) => t.name),
  schemas: Object.fromEntries(tools.map((t) => [t.name, t.inputSchema])),
  task_id: taskId,
  acknowledgment: ack.structuredContent.acknowledgment_message,
  status: done.structuredContent.status,
  result: done.structuredContent.result,
  links: done.content.filter((c) => c.type === 'resource_link').map((c) => c.uri),
  notified,
  updated,
  progress,
  bad_args_error: badArgs.isError ? badArgs.structuredContent.error : null,
}));
await client.close();
