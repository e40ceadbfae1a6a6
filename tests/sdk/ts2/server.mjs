// The ledger tools of mcp-chaos (docs/wire.md, section 6) on the official
// TypeScript MCP SDK's v2 server line (@modelcontextprotocol/server) as it
// ships: createMcpHandler at /mcp, wrapped for node:http with toNodeHandler
// from @modelcontextprotocol/node, as the package documents. One endpoint
// serves both protocol eras: a request carrying the 2026-07-28 envelope is
// served by a fresh server instance per request; 2025-era traffic (initialize
// and the rest) by the entry's default stateless fallback, a fresh instance
// and streamable HTTP transport per POST with no session id and no event
// store (GET and DELETE: 405). v2 ships no in-memory event store, and the
// fallback takes none.
//
//   node server.mjs PORT        (or PORT=… node server.mjs)   on 127.0.0.1
//
// Nothing here guards against retries: `mcp-chaos probe` reports what the
// SDK does on its own. Like tests/sdk/ts/server.mjs, the tool does not
// watch its abort signal (ctx.mcpReq.signal): a close or a cancel aborts
// the signal and the SDK drops the result, but the tool runs on.
import { createServer } from "node:http";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { createMcpHandler, ProtocolError, ProtocolErrorCode, Server } from "@modelcontextprotocol/server";

const port = Number(process.argv[2] ?? process.env.PORT ?? 8080);
const executions = new Map(); // tag -> executions started, across requests
const finished = new Map(); // tag -> executions that reached their result
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const int = (lo, hi) => ({ type: "integer", minimum: lo, maximum: hi });
const bump = (map, tag) => {
  const n = (map.get(tag) ?? 0) + 1;
  map.set(tag, n);
  return n;
};

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
const bad = (message) => new ProtocolError(ProtocolErrorCode.InvalidParams, message);

async function ledgerAppend(args, request, ctx) {
  const { tag, chunks = 1, chunk_interval_ms: interval = 0 } = args;
  if (typeof tag !== "string") throw bad("tag: a string is required");
  if (!Number.isInteger(chunks) || chunks < 1 || chunks > 1000) throw bad("chunks: 1..=1000");
  if (!Number.isInteger(interval) || interval < 0 || interval > 3600000) throw bad("chunk_interval_ms: 0..=3600000");
  const execution = bump(executions, tag); // counted when the tool starts
  const token = request.params._meta?.progressToken;
  for (let k = 1; k < chunks; k++) {
    await sleep(interval);
    const chunk = `ledger:${execution}:${k}:${tag}`;
    // A send to a closed exchange is dropped; the tool goes on.
    await ctx.mcpReq.notify(token !== undefined
      ? { method: "notifications/progress", params: { progressToken: token, progress: k, total: chunks, message: chunk } }
      : { method: "notifications/message", params: { level: "info", data: { chunk, progress: k, requestId: ctx.mcpReq.id, total: chunks } } },
    ).catch(() => {});
  }
  await sleep(interval);
  bump(finished, tag);
  return text({ chunk: `ledger:${execution}:${chunks}:${tag}`, executions: executions.get(tag), tag });
}

// The factory: one fresh instance per HTTP request (both eras).
function mcpServer() {
  const server = new Server({ name: "mcp-chaos-sdk-ts2", version: "1.0.0" }, { capabilities: { tools: {}, logging: {} } });
  server.setRequestHandler("tools/list", async () => ({ tools }));
  server.setRequestHandler("tools/call", async (request, ctx) => {
    const { name, arguments: args = {} } = request.params;
    if (name === "ledger_append") return ledgerAppend(args, request, ctx);
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

const handler = toNodeHandler(createMcpHandler(mcpServer));
const refuse = (res, status, code, message) =>
  res.writeHead(status, { "content-type": "application/json" })
    .end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code, message } }));

createServer((req, res) => {
  if (new URL(req.url, "http://localhost").pathname !== "/mcp") return refuse(res, 404, -32001, "not found");
  return handler(req, res);
}).listen(port, "127.0.0.1", () => console.log(`TS SDK v2 server on http://127.0.0.1:${port}/mcp`));
