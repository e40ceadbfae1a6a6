// The ledger tools of mcp-chaos (docs/wire.md, section 6) on the official
// TypeScript MCP SDK as it ships: streamable HTTP at /mcp, one stateful
// session per initialize, and the SDK's in-memory event store so that a
// client can resume a lost stream with GET + Last-Event-ID.
//
//   node server.mjs PORT        (or PORT=… node server.mjs)   on 127.0.0.1
//
// Nothing here guards against retries: `mcp-chaos probe` reports what the
// SDK does on its own.
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";
import {
  CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, isInitializeRequest,
} from "@modelcontextprotocol/sdk/types.js";

const port = Number(process.argv[2] ?? process.env.PORT ?? 8080);
const executions = new Map(); // tag -> executions started, across sessions
const finished = new Map(); // tag -> executions that reached their result
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const int = (lo, hi) => ({ type: "integer", minimum: lo, maximum: hi });

const tools = [
  {
    name: "ledger_append",
    description: "Appends to the tag's ledger: chunks-1 progress events, then the result.",
    inputSchema: {
      type: "object", required: ["tag"],
      properties: { tag: { type: "string" }, chunks: int(1, 1000), chunk_interval_ms: int(0, 3600000) },
    },
    annotations: { idempotentHint: false },
  },
  {
    name: "ledger_read",
    description: "How many times each tag's ledger_append ran, and how many of those reached their result.",
    inputSchema: { type: "object", properties: { tag: { type: "string" } } },
    annotations: { idempotentHint: true, readOnlyHint: true },
  },
];

const text = (value) => ({ content: [{ type: "text", text: JSON.stringify(value) }], isError: false });
const bad = (message) => new McpError(ErrorCode.InvalidParams, message);

async function ledgerAppend(args, request, extra) {
  const { tag, chunks = 1, chunk_interval_ms: interval = 0 } = args;
  if (typeof tag !== "string") throw bad("tag: a string is required");
  if (!Number.isInteger(chunks) || chunks < 1 || chunks > 1000) throw bad("chunks: 1..=1000");
  if (!Number.isInteger(interval) || interval < 0 || interval > 3600000) throw bad("chunk_interval_ms: 0..=3600000");
  const execution = (executions.get(tag) ?? 0) + 1; // counted when the tool starts
  executions.set(tag, execution);
  const token = request.params._meta?.progressToken;
  for (let k = 1; k < chunks; k++) {
    await sleep(interval);
    const chunk = `ledger:${execution}:${k}:${tag}`;
    // A send to a dropped stream still lands in the event store; the tool goes on.
    await extra.sendNotification(token !== undefined
      ? { method: "notifications/progress", params: { progressToken: token, progress: k, total: chunks, message: chunk } }
      : { method: "notifications/message", params: { level: "info", data: { chunk, progress: k, requestId: extra.requestId, total: chunks } } },
    ).catch(() => {});
  }
  await sleep(interval);
  finished.set(tag, (finished.get(tag) ?? 0) + 1);
  return text({ chunk: `ledger:${execution}:${chunks}:${tag}`, executions: executions.get(tag), tag });
}

function mcpServer() {
  const server = new Server({ name: "mcp-chaos-sdk-ts", version: "1.0.0" }, { capabilities: { tools: {}, logging: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args = {} } = request.params;
    if (name === "ledger_append") return ledgerAppend(args, request, extra);
    if (name !== "ledger_read") throw bad(`unknown tool: ${name}`);
    if (args.tag !== undefined && typeof args.tag !== "string") throw bad("tag: a string");
    const tags = args.tag === undefined ? [...executions.keys()] : [args.tag];
    return text({
      executions: Object.fromEntries(tags.map((t) => [t, executions.get(t) ?? 0])),
      finished: Object.fromEntries(tags.map((t) => [t, finished.get(t) ?? 0])),
    });
  });
  return server;
}

const sessions = new Map(); // session id -> transport
const refuse = (res, status, code, message) =>
  res.writeHead(status, { "content-type": "application/json" })
    .end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code, message } }));

async function readJson(req) {
  const parts = [];
  for await (const part of req) parts.push(part);
  return JSON.parse(Buffer.concat(parts).toString("utf8"));
}

createServer(async (req, res) => {
  if (new URL(req.url, "http://localhost").pathname !== "/mcp") return refuse(res, 404, -32001, "not found");
  const id = req.headers["mcp-session-id"];
  if (id !== undefined) {
    const transport = sessions.get(id);
    if (!transport) return refuse(res, 404, -32001, "Session not found");
    return transport.handleRequest(req, res);
  }
  // No session: only an initialize POST opens one.
  let body;
  try {
    body = req.method === "POST" ? await readJson(req) : undefined;
  } catch {
    return refuse(res, 400, ErrorCode.ParseError, "Parse error");
  }
  if (!isInitializeRequest(body)) return refuse(res, 400, -32000, "Bad Request: no session id");
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: randomUUID,
    eventStore: new InMemoryEventStore(),
    onsessioninitialized: (sid) => sessions.set(sid, transport),
  });
  transport.onclose = () => sessions.delete(transport.sessionId);
  await mcpServer().connect(transport);
  return transport.handleRequest(req, res, body);
}).listen(port, "127.0.0.1", () => console.log(`TS SDK server on http://127.0.0.1:${port}/mcp`));
