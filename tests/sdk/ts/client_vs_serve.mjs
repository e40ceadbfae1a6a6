// The official TypeScript MCP client loses a tool call's stream and resumes
// it: the same check as tests/sdk/python/client_vs_serve.py, with the
// TypeScript SDK's Client over StreamableHTTPClientTransport.
//
//   node client_vs_serve.mjs --url http://127.0.0.1:PORT/mcp [--chunks 6] [--interval-ms 400] [--timeout 30]
//
// A small TCP proxy (in this file) cuts the connection carrying the
// `ledger_append` POST once its first progress event has reached the client;
// the SDK must reconnect on its own (GET + Last-Event-ID) and the call must
// end with one result of execution 1: `ledger:1:<chunks>:<tag>` returned,
// every progress message of execution 1, a GET with Last-Event-ID after the
// cut, the result on the wire once, no chunk of another execution, and
// `ledger_read {tag}` saying 1. Any failure prints one `FAIL:` line, exit 1.
import net from "node:net";
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

class Failure extends Error {}

function isLedgerAppend(body) {
  try {
    const msg = JSON.parse(body);
    return msg?.method === "tools/call" && msg?.params?.name === "ledger_append";
  } catch {
    return false;
  }
}

// True once a whole SSE frame carrying notifications/progress is in buf[start..].
function firstProgressPassed(buf, start) {
  const at = buf.indexOf("notifications/progress", start);
  return at >= 0 && ["\n\n", "\r\n\r\n", "\r\r"].some((end) => buf.indexOf(end, at) >= 0);
}

// Forwards TCP to the server; cuts the first ledger_append POST's connection
// after its first progress event reached the client.
function cuttingProxy(host, port) {
  const seen = { requests: [], downstream: [], cut: false, requestsAtCut: 0, unreadable: "" };
  const sockets = new Set();
  const server = net.createServer((client) => {
    const up = net.connect(port, host);
    sockets.add(client).add(up);
    const down = { buf: Buffer.alloc(0) };
    seen.downstream.push(down);
    let pending = Buffer.alloc(0);
    let armedAt = -1; // where the ledger_append response begins in down.buf
    const closeBoth = () => { client.destroy(); up.destroy(); };
    client.on("error", closeBoth).on("close", closeBoth);
    up.on("error", closeBoth).on("close", closeBoth);
    client.on("data", (data) => { // one HTTP/1.1 request at a time: head, then a Content-Length body
      pending = Buffer.concat([pending, data]);
      for (;;) {
        const end = pending.indexOf("\r\n\r\n");
        if (end < 0) return;
        const lines = pending.subarray(0, end).toString("latin1").split("\r\n");
        const headers = {};
        for (const line of lines.slice(1)) {
          const i = line.indexOf(":");
          if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
        }
        if (headers["transfer-encoding"]) seen.unreadable = `request with Transfer-Encoding: ${headers["transfer-encoding"]}`;
        const total = end + 4 + Number(headers["content-length"] ?? 0);
        if (pending.length < total) return;
        const method = lines[0].split(" ")[0];
        const body = pending.subarray(end + 4, total).toString("utf8");
        seen.requests.push({ method, headers, body });
        if (method === "POST" && !seen.cut && armedAt < 0 && isLedgerAppend(body)) armedAt = down.buf.length;
        up.write(pending.subarray(0, total));
        pending = pending.subarray(total);
      }
    });
    up.on("data", (data) => {
      down.buf = Buffer.concat([down.buf, data]);
      if (seen.cut && armedAt >= 0) return; // this connection was cut
      client.write(data);
      if (armedAt >= 0 && !seen.cut && firstProgressPassed(down.buf, armedAt)) {
        seen.cut = true;
        seen.requestsAtCut = seen.requests.length;
        client.end(); // after what was written
        up.destroy();
      }
    });
  });
  return {
    seen,
    listen: () => new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server.address().port))),
    close: () => { server.close(); for (const s of sockets) s.destroy(); },
  };
}

function resultJson(result, tool) {
  if (result.isError) throw new Failure(`${tool} returned an error result: ${JSON.stringify(result)}`);
  const texts = (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text);
  if (texts.length !== 1) throw new Failure(`${tool} result has ${texts.length} text contents, expected 1: ${JSON.stringify(result)}`);
  try {
    return JSON.parse(texts[0]);
  } catch {
    throw new Failure(`${tool} result text is not JSON: ${texts[0]}`);
  }
}

async function canConnect(host, port) {
  await new Promise((resolve, reject) => {
    const s = net.connect(port, host, () => { s.destroy(); resolve(); });
    s.on("error", (e) => reject(new Failure(`cannot connect to ${host}:${port}: ${e.message}`)));
  });
}

async function run(url, chunks, intervalMs) {
  const target = new URL(url);
  const host = target.hostname;
  const port = Number(target.port || 80);
  await canConnect(host, port);
  const proxy = cuttingProxy(host, port);
  const proxied = new URL(url);
  proxied.host = `127.0.0.1:${await proxy.listen()}`;
  const tag = `sdk-ts-${randomUUID().slice(0, 12)}`;
  const progress = [];
  const client = new Client({ name: "mcp-chaos-sdk-check", version: "1.0.0" });
  let append, readBack;
  try {
    await client.connect(new StreamableHTTPClientTransport(proxied));
    const names = new Set((await client.listTools()).tools.map((t) => t.name));
    const missing = ["ledger_append", "ledger_read"].filter((n) => !names.has(n));
    if (missing.length) throw new Failure(`tools/list lacks ${missing.join(", ")} (has ${[...names].join(", ")})`);
    const result = await client.callTool(
      { name: "ledger_append", arguments: { tag, chunks, chunk_interval_ms: intervalMs } },
      undefined,
      { onprogress: (p) => progress.push(p.message), timeout: 60000 },
    );
    append = resultJson(result, "ledger_append");
    readBack = resultJson(await client.callTool({ name: "ledger_read", arguments: { tag } }), "ledger_read");
  } finally {
    await client.close().catch(() => {});
    proxy.close();
  }

  const want = `ledger:1:${chunks}:${tag}`;
  if (append.chunk !== want) throw new Failure(`ledger_append returned chunk ${JSON.stringify(append.chunk)}, expected ${want}`);
  if (append.executions !== 1) throw new Failure(`ledger_append result says executions=${append.executions}, expected 1`);
  if (!progress.length) throw new Failure("no progress notification reached the onprogress callback");
  const chunkRe = (prefix) => new RegExp(`${prefix}ledger:(\\d+):(\\d+):${tag}`, "g");
  for (const message of progress) {
    const m = [...String(message).matchAll(chunkRe("^"))][0];
    if (!m || m[1] !== "1" || m[0] !== message) throw new Failure(`progress message ${JSON.stringify(message)} is not a chunk of execution 1 of ${tag}`);
  }
  if (proxy.seen.unreadable) throw new Failure(`the proxy cannot frame a ${proxy.seen.unreadable}`);
  if (!proxy.seen.cut) throw new Failure("the proxy never cut the stream: no progress event passed before the result");
  const resumes = proxy.seen.requests.slice(proxy.seen.requestsAtCut)
    .filter((r) => r.method === "GET" && r.headers["last-event-id"] !== undefined)
    .map((r) => r.headers["last-event-id"]);
  if (!resumes.length) throw new Failure("the client did not resume: no GET with Last-Event-ID after the cut");
  const wire = Buffer.concat(proxy.seen.downstream.map((d) => d.buf)).toString("utf8");
  const ids = [...wire.matchAll(chunkRe(""))];
  const results = ids.filter((m) => m[1] === "1" && m[2] === String(chunks)).length;
  if (results !== 1) throw new Failure(`the result ${want} crossed the wire ${results} times, expected once`);
  const others = [...new Set(ids.map((m) => m[1]).filter((e) => e !== "1"))].sort();
  if (others.length) throw new Failure(`executions ${others.join(", ")} of ${tag} sent chunks: the call ran again`);
  const executions = readBack.executions?.[tag];
  if (executions !== 1) throw new Failure(`ledger_read says ${tag} ran ${executions} times, expected 1`);
  const indexes = progress.map((m) => m.split(":")[2]).join(", ");
  return `ok: ${want} once; ${progress.length} progress events (${indexes}); resumed with Last-Event-ID ${resumes.join(", ")}`;
}

const { values: opts } = parseArgs({
  options: {
    url: { type: "string" },
    chunks: { type: "string", default: "6" },
    "interval-ms": { type: "string", default: "400" },
    timeout: { type: "string", default: "30" },
  },
});
const chunks = Number(opts.chunks);
if (!opts.url || !Number.isInteger(chunks) || chunks < 2) {
  console.error("usage: node client_vs_serve.mjs --url http://127.0.0.1:PORT/mcp [--chunks N>=2] [--interval-ms MS] [--timeout S]");
  process.exit(3);
}
const timeoutS = Number(opts.timeout);
let timer;
const deadline = new Promise((_, reject) => {
  timer = setTimeout(() => reject(new Failure(`no result within ${timeoutS} s`)), timeoutS * 1000);
});
try {
  console.log(`${opts.url}: ${await Promise.race([run(opts.url, chunks, Number(opts["interval-ms"])), deadline])}`);
  process.exit(0);
} catch (e) {
  console.error(`FAIL: ${opts.url}: ${e instanceof Failure ? e.message : `${e?.name}: ${e?.message}`}`);
  process.exit(1);
} finally {
  clearTimeout(timer);
}
