"""The official Python MCP client loses a tool call's stream and resumes it.

Usage: client_vs_serve.py --url http://127.0.0.1:PORT/mcp [--chunks 6]
                          [--interval-ms 400] [--timeout 30]

Between the client and the server runs a small TCP proxy (in this file).
The client, with the SDK's own API only (ClientSession over
streamable_http_client), initializes, lists the tools, and calls
`ledger_append` with a unique tag and a progress callback. The proxy cuts
the connection carrying that call's POST as soon as the first progress
event has passed through to the client. The SDK then reconnects on its own
with `GET` + `Last-Event-ID` (its transport's reconnection logic) and the
call must end with exactly one result, from the first execution:

- `call_tool` returns a result whose chunk is `ledger:1:<chunks>:<tag>`;
- every progress message names execution 1;
- the proxy saw a `GET` carrying `Last-Event-ID` after the cut;
- the result's chunk crossed the proxy exactly once, and no chunk of a
  second execution crossed it;
- `ledger_read {tag}` says the tag ran once.

Any failure prints one `FAIL:` line and exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import sys
import uuid
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


class Failure(Exception):
    """A check that did not hold; its message is the report."""


@dataclass
class Seen:
    """What crossed the proxy, for the checks after the call."""

    requests: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    downstream: list[bytearray] = field(default_factory=list)
    cut: bool = False
    requests_at_cut: int = 0
    unreadable: str = ""  # a request the proxy could not frame


class CuttingProxy:
    """Forwards TCP to the server; cuts the first `ledger_append` POST after
    its first progress event reached the client."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.seen = Seen()
        self.server: asyncio.base_events.Server | None = None
        self.open: dict[asyncio.Task, tuple[asyncio.StreamWriter, ...]] = {}

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        """Stops listening and ends the connections still open."""
        if self.server is not None:
            self.server.close()
        for writers in self.open.values():
            for w in writers:
                w.close()
        if self.open:
            await asyncio.wait(list(self.open), timeout=2)

    async def _serve(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        try:
            sreader, swriter = await asyncio.open_connection(*self.upstream)
        except OSError:
            cwriter.close()
            return
        task = asyncio.current_task()
        self.open[task] = (cwriter, swriter)
        down = bytearray()
        self.seen.downstream.append(down)
        armed_at: list[int] = []  # where the ledger_append response begins in `down`
        done = asyncio.Event()

        def close_both() -> None:
            done.set()
            for w in (cwriter, swriter):
                w.close()

        async def upstream() -> None:
            # One HTTP/1.1 request at a time: head, then a Content-Length body.
            try:
                while not done.is_set():
                    head = await creader.readuntil(b"\r\n\r\n")
                    lines = head.decode("latin-1").split("\r\n")
                    method = lines[0].split(" ", 1)[0]
                    headers = {}
                    for line in lines[1:]:
                        if ":" in line:
                            k, v = line.split(":", 1)
                            headers[k.strip().lower()] = v.strip()
                    body = b""
                    if "transfer-encoding" in headers:
                        self.seen.unreadable = f"{method} with Transfer-Encoding: {headers['transfer-encoding']}"
                    if "content-length" in headers:
                        body = await creader.readexactly(int(headers["content-length"]))
                    self.seen.requests.append((method, headers, body))
                    if method == "POST" and not self.seen.cut and not armed_at and is_ledger_append(body):
                        armed_at.append(len(down))
                    swriter.write(head + body)
                    await swriter.drain()
            except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
                pass
            close_both()

        async def downstream() -> None:
            try:
                while True:
                    data = await sreader.read(65536)
                    if not data:
                        break
                    down.extend(data)
                    cwriter.write(data)
                    await cwriter.drain()
                    if armed_at and not self.seen.cut and first_progress_passed(down, armed_at[0]):
                        self.seen.cut = True
                        self.seen.requests_at_cut = len(self.seen.requests)
                        break
            except ConnectionError:
                pass
            close_both()

        try:
            await asyncio.gather(upstream(), downstream())
        finally:
            self.open.pop(task, None)


def is_ledger_append(body: bytes) -> bool:
    try:
        msg = json.loads(body)
    except ValueError:
        return False
    return (
        isinstance(msg, dict)
        and msg.get("method") == "tools/call"
        and (msg.get("params") or {}).get("name") == "ledger_append"
    )


def first_progress_passed(down: bytearray, start: int) -> bool:
    """True once a whole SSE frame carrying notifications/progress is in `down[start:]`."""
    at = down.find(b"notifications/progress", start)
    return at >= 0 and any(down.find(end, at) >= 0 for end in (b"\n\n", b"\r\n\r\n", b"\r\r"))


async def run(url: str, chunks: int, interval_ms: int) -> str:
    parts = urlsplit(url)
    host, server_port = parts.hostname or "127.0.0.1", parts.port or 80
    try:
        _, probe_writer = await asyncio.open_connection(host, server_port)
        probe_writer.close()
    except OSError as e:
        raise Failure(f"cannot connect to {host}:{server_port}: {e}") from None
    proxy = CuttingProxy(host, server_port)
    port = await proxy.start()
    proxied = urlunsplit((parts.scheme, f"127.0.0.1:{port}", parts.path, parts.query, ""))
    tag = f"sdk-{uuid.uuid4().hex[:12]}"
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    try:
        async with streamable_http_client(proxied) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                names = {t.name for t in (await session.list_tools()).tools}
                missing = {"ledger_append", "ledger_read"} - names
                if missing:
                    raise Failure(f"tools/list lacks {sorted(missing)} (has {sorted(names)})")
                result = await session.call_tool(
                    "ledger_append",
                    {"tag": tag, "chunks": chunks, "chunk_interval_ms": interval_ms},
                    progress_callback=on_progress,
                )
                append = result_json(result, "ledger_append")
                read_back = result_json(
                    await session.call_tool("ledger_read", {"tag": tag}), "ledger_read"
                )
    finally:
        await proxy.close()

    want = f"ledger:1:{chunks}:{tag}"
    if append.get("chunk") != want:
        raise Failure(f"ledger_append returned chunk {append.get('chunk')!r}, expected {want!r}")
    if append.get("executions") != 1:
        raise Failure(f"ledger_append result says executions={append.get('executions')!r}, expected 1")
    for message in progress:
        m = re.fullmatch(r"ledger:(\d+):(\d+):" + re.escape(tag), message or "")
        if not m or m.group(1) != "1":
            raise Failure(f"progress message {message!r} is not a chunk of execution 1 of {tag}")
    if not progress:
        raise Failure("no progress notification reached the progress callback")
    if proxy.seen.unreadable:
        raise Failure(f"the proxy cannot frame a {proxy.seen.unreadable} request")
    if not proxy.seen.cut:
        raise Failure("the proxy never cut the stream: no progress event passed before the result")
    resumes = [
        h.get("last-event-id")
        for method, h, _ in proxy.seen.requests[proxy.seen.requests_at_cut :]
        if method == "GET" and "last-event-id" in h
    ]
    if not resumes:
        raise Failure("the client did not resume: no GET with Last-Event-ID after the cut")
    wire = b"".join(proxy.seen.downstream).decode("utf-8", "replace")
    chunk_ids = re.findall(r"ledger:(\d+):(\d+):" + re.escape(tag), wire)
    results_on_wire = sum(1 for e, i in chunk_ids if e == "1" and i == str(chunks))
    if results_on_wire != 1:
        raise Failure(f"the result {want} crossed the wire {results_on_wire} times, expected once")
    others = sorted({e for e, _ in chunk_ids if e != "1"})
    if others:
        raise Failure(f"executions {others} of {tag} sent chunks: the call ran again")
    executions = (read_back.get("executions") or {}).get(tag)
    if executions != 1:
        raise Failure(f"ledger_read says {tag} ran {executions!r} times, expected 1")
    return (
        f"ok: {want} once; {len(progress)} progress events "
        f"({', '.join(m.split(':')[2] for m in progress if m)}); "
        f"resumed with Last-Event-ID {', '.join(resumes)}"
    )


def result_json(result: object, tool: str) -> dict:
    if getattr(result, "is_error", False):
        raise Failure(f"{tool} returned an error result: {result}")
    content = getattr(result, "content", None) or []
    texts = [c.text for c in content if getattr(c, "type", None) == "text"]
    if len(texts) != 1:
        raise Failure(f"{tool} result has {len(texts)} text contents, expected 1: {result}")
    try:
        value = json.loads(texts[0])
    except ValueError:
        raise Failure(f"{tool} result text is not JSON: {texts[0]!r}") from None
    if not isinstance(value, dict):
        raise Failure(f"{tool} result text is not a JSON object: {texts[0]!r}")
    return value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True, help="the server's MCP endpoint, e.g. http://127.0.0.1:8080/mcp")
    ap.add_argument("--chunks", type=int, default=6)
    ap.add_argument("--interval-ms", type=int, default=400)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds for the whole exchange")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s: %(message)s")
    if args.chunks < 2:
        ap.error("--chunks must be at least 2: the cut needs one progress event")

    async def bounded() -> str:
        with anyio.fail_after(args.timeout):
            return await run(args.url, args.chunks, args.interval_ms)

    try:
        print(f"{args.url}: {anyio.run(bounded)}", flush=True)
        return 0
    except Exception as e:  # checks, timeouts, the SDK's errors (often in task groups)
        leaves = list(leaf_errors(e))
        failures = [x for x in leaves if isinstance(x, Failure)] or leaves
        why = "; ".join(
            f"no result within {args.timeout:g} s" if isinstance(x, TimeoutError)
            else str(x) if isinstance(x, Failure)
            else f"{type(x).__name__}: {x}"
            for x in failures
        )
        print(f"FAIL: {args.url}: {why}", file=sys.stderr)
    return 1


def leaf_errors(e: BaseException):
    """The exceptions inside (possibly nested) exception groups."""
    if isinstance(e, BaseExceptionGroup):
        for sub in e.exceptions:
            yield from leaf_errors(sub)
    else:
        yield e


if __name__ == "__main__":
    sys.exit(main())
