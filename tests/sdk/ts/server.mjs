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
import { ledger, tools } from "../ledger.mjs";

const port = Number(process.argv[2] ?? process.env.PORT ?? 8080);
const bad = (message) => new McpError(ErrorCode.InvalidParams, message);
const { ledgerAppend, ledgerRead } = ledger(bad);

function mcpServer() {
  const server = new Server({ name: "mcp-chaos-sdk-ts", version: "1.0.0" }, { capabilities: { tools: {}, logging: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args = {} } = request.params;
    // A send to a dropped stream still lands in the event store.
    if (name === "ledger_append") return ledgerAppend(args, request, (m) => extra.sendNotification(m), extra.requestId);
    if (name !== "ledger_read") throw bad(`unknown tool: ${name}`);
    return ledgerRead(args);
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
