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
import { ledger, tools } from "../ledger.mjs";

const port = Number(process.argv[2] ?? process.env.PORT ?? 8080);
const bad = (message) => new ProtocolError(ProtocolErrorCode.InvalidParams, message);
const { ledgerAppend, ledgerRead } = ledger(bad);

// The factory: one fresh instance per HTTP request (both eras).
function mcpServer() {
  const server = new Server({ name: "mcp-chaos-sdk-ts2", version: "1.0.0" }, { capabilities: { tools: {}, logging: {} } });
  server.setRequestHandler("tools/list", async () => ({ tools }));
  server.setRequestHandler("tools/call", async (request, ctx) => {
    const { name, arguments: args = {} } = request.params;
    // A send to a closed exchange is dropped.
    if (name === "ledger_append") return ledgerAppend(args, request, (m) => ctx.mcpReq.notify(m), ctx.mcpReq.id);
    if (name !== "ledger_read") throw bad(`unknown tool: ${name}`);
    return ledgerRead(args);
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
