"""The ledger tools of mcp-chaos (docs/wire.md, section 6) on the official
Python MCP SDK as it ships: MCPServer over streamable HTTP at /mcp, stateful
sessions, and an in-memory event store (the package ships the EventStore
interface only) so that a client can resume a lost stream with GET +
Last-Event-ID.

    python server.py PORT        (on 127.0.0.1)

Nothing here guards against retries: `mcp-chaos probe` reports what the SDK
does on its own.
"""

import asyncio
import itertools
import json
import sys
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.types import JSONRPCMessage, ToolAnnotations
from pydantic import Field


class MemoryEventStore(EventStore):
    """Every event of every stream, numbered 1, 2, 3... across the process,
    kept until the process ends (an example, not a bounded store).

    The SDK hands this one store to every session, and the interface names
    streams (by request id) but no session.
    """

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.events: dict[EventId, tuple[StreamId, JSONRPCMessage | None]] = {}  # None: a priming event

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = str(next(self.ids))
        self.events[event_id] = (stream_id, message)
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        if last_event_id not in self.events:
            return None
        stream_id = self.events[last_event_id][0]
        for event_id, (stream, message) in list(self.events.items()):
            if stream == stream_id and int(event_id) > int(last_event_id) and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


mcp = MCPServer("mcp-chaos-sdk-python")
executions: dict[str, int] = {}  # tag -> executions started, across sessions
finished: dict[str, int] = {}  # tag -> executions that reached their result (a cancelled one never does)


def text(value: dict) -> str:
    return json.dumps(value, separators=(",", ":"))


@mcp.tool(annotations=ToolAnnotations(idempotent_hint=False), structured_output=False)
async def ledger_append(
    tag: str,
    ctx: Context,
    chunks: Annotated[int, Field(ge=1, le=1000)] = 1,
    chunk_interval_ms: Annotated[int, Field(ge=0, le=3_600_000)] = 0,
) -> str:
    """Appends to the tag's ledger: chunks-1 progress events, then the result."""
    execution = executions[tag] = executions.get(tag, 0) + 1  # counted when the tool starts
    for k in range(1, chunks):
        await asyncio.sleep(chunk_interval_ms / 1000)
        # Without a progress token the SDK sends nothing; a dropped stream does not stop the tool.
        await ctx.report_progress(k, chunks, f"ledger:{execution}:{k}:{tag}")
    await asyncio.sleep(chunk_interval_ms / 1000)
    finished[tag] = finished.get(tag, 0) + 1
    return text({"chunk": f"ledger:{execution}:{chunks}:{tag}", "executions": executions[tag], "tag": tag})


@mcp.tool(annotations=ToolAnnotations(idempotent_hint=True, read_only_hint=True), structured_output=False)
def ledger_read(tag: str | None = None) -> str:
    """How many times each tag's ledger_append ran, and how many of those reached their result."""
    tags = list(executions) if tag is None else [tag]
    return text({
        "executions": {t: executions.get(t, 0) for t in tags},
        "finished": {t: finished.get(t, 0) for t in tags},
    })


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8080
    mcp.run("streamable-http", host="127.0.0.1", port=port, event_store=MemoryEventStore())
