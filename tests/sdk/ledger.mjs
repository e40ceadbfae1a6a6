// The ledger tools of mcp-chaos (docs/wire.md, section 6) in plain
// JavaScript, shared by the TypeScript SDK test servers (ts/ and ts2/),
// which differ only in how their SDK sends a notification and names its
// errors. No package is imported here: each server passes its own.
//
//   const { tools, ledgerAppend, ledgerRead } = ledger(bad);
//   bad(message): the SDK's InvalidParams error.

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const int = (lo, hi) => ({ type: "integer", minimum: lo, maximum: hi });
const text = (value) => ({ content: [{ type: "text", text: JSON.stringify(value) }], isError: false });

export const tools = [
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

export function ledger(bad) {
  const executions = new Map(); // tag -> executions started, across sessions and requests
  const finished = new Map(); // tag -> executions that reached their result
  const bump = (map, tag) => {
    const n = (map.get(tag) ?? 0) + 1;
    map.set(tag, n);
    return n;
  };

  // `notify(message)`: the SDK's send of a notification on the call's
  // exchange; `requestId`: the call's id. The tool does not watch its abort
  // signal: a close or a cancel stops nothing here, as a tool that ignores
  // the signal behaves.
  async function ledgerAppend(args, request, notify, requestId) {
    const { tag, chunks = 1, chunk_interval_ms: interval = 0 } = args;
    if (typeof tag !== "string") throw bad("tag: a string is required");
    if (!Number.isInteger(chunks) || chunks < 1 || chunks > 1000) throw bad("chunks: 1..=1000");
    if (!Number.isInteger(interval) || interval < 0 || interval > 3600000) throw bad("chunk_interval_ms: 0..=3600000");
    const execution = bump(executions, tag); // counted when the tool starts
    const token = request.params._meta?.progressToken;
    for (let k = 1; k < chunks; k++) {
      await sleep(interval);
      const chunk = `ledger:${execution}:${k}:${tag}`;
      // A send to a dropped or closed exchange fails or is stored; the tool goes on.
      await notify(token !== undefined
        ? { method: "notifications/progress", params: { progressToken: token, progress: k, total: chunks, message: chunk } }
        : { method: "notifications/message", params: { level: "info", data: { chunk, progress: k, requestId, total: chunks } } },
      ).catch(() => {});
    }
    await sleep(interval);
    bump(finished, tag);
    return text({ chunk: `ledger:${execution}:${chunks}:${tag}`, executions: executions.get(tag), tag });
  }

  function ledgerRead(args) {
    if (args.tag !== undefined && typeof args.tag !== "string") throw bad("tag: a string");
    const tags = args.tag === undefined ? [...executions.keys()] : [args.tag];
    return text({
      executions: Object.fromEntries(tags.map((t) => [t, executions.get(t) ?? 0])),
      finished: Object.fromEntries(tags.map((t) => [t, finished.get(t) ?? 0])),
    });
  }

  return { ledgerAppend, ledgerRead };
}
