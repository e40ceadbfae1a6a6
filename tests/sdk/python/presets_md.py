"""Puts each `[server] sdk = ...` preset beside the SDK it stands for, hazard
by hazard, for tests/sdk/run: the probe's verdicts on `serve --server
unguarded --sdk NAME` against its verdicts on the SDK's own server.

  presets_md.py --out FILE PAIR...
  PAIR: PRESET ERA PRESET_JSON SDK_JSON   (four arguments, repeated)

Writes the table between the preset markers of FILE (results/calibration.md,
below its notes marker, where `mcp-chaos calibrate` keeps hand-written text),
or appends them when absent. A hazard both sides could test and judged
differently needs a line in WHY below, which says what the model leaves out;
without one the script names it and exits 1: the preset no longer stands for
its SDK there.
"""

import json
import sys

BEGIN = "<!-- presets: written by tests/sdk/run -->"
END = "<!-- presets: end -->"

def no_legacy(sdk: str) -> str:
    """Why `legacy-session` is tested on the preset alone."""
    return f"the built-in arms also serve the legacy HTTP+SSE transport; {sdk} has none (untestable there)"


# Why a preset and its SDK differ, where both can test the hazard.
WHY = {
    ("python", "2025-11-25", "resume-foreign-session"):
        "the Python SDK hands one event store to every session and its EventStore interface does not see the session "
        "(the test server's store is the minimal one its docs show); the built-in server keeps one store per session. "
        "No preset knob shares a store between sessions",
    ("python", "2025-11-25", "legacy-session"):
        "the built-in arms also serve the legacy HTTP+SSE transport, whose session ids the unguarded arm accepts on the "
        "streamable endpoint; the Python SDK's streamable server has no legacy transport (untestable there)",
    ("rmcp", "2025-11-25", "legacy-session"): no_legacy("rmcp"),
    ("typescript", "2025-11-25", "resume-malformed"):
        "the TypeScript v2 server's createMcpHandler serves the 2025-11-25 wire from its stateless fallback, which "
        "answers every GET 405 before it reads a Last-Event-ID; the preset keeps the built-in server's sessions and "
        "streams on that wire (a v2 server that keeps sessions builds its own transport with a session id generator)",
    ("typescript", "2025-11-25", "duplicate-inflight-id"):
        "in the TypeScript v2 server's stateless fallback every POST is an exchange of its own, so two calls under one "
        "id never meet; the preset keeps the built-in server's sessions, where they do",
    ("typescript", "2025-11-25", "legacy-session"): no_legacy("the TypeScript v2 handler"),
    ("rmcp", "2025-11-25", "second-get"):
        "rmcp accepts a second standalone GET; the built-in server answers it 409. No preset knob opens a second one",
}


def verdicts(path: str) -> dict[str, str]:
    try:
        with open(path, encoding="utf-8") as f:
            found = json.load(f)
    except (OSError, ValueError):
        return {}
    return {e.get("hazard"): e.get("verdict") for e in found if isinstance(e, dict)}


def table(pairs: list[tuple[str, str, str, str]]) -> tuple[str, list[str]]:
    lines = [
        BEGIN,
        "## Each preset beside its SDK",
        "",
        "`mcp-chaos probe` against `serve --server unguarded --sdk NAME` (the preset) and against the SDK's own "
        "server (tests/sdk/), hazard by hazard. A difference where both can test the hazard is explained; "
        "`untestable` on one side is the server offering less (no legacy transport, no resume), not a disagreement.",
        "",
        "| preset | wire | hazard | preset | SDK | |",
        "|---|---|---|---|---|---|",
    ]
    missing = []
    for preset, era, mine, theirs in pairs:
        a, b = verdicts(mine), verdicts(theirs)
        if not a or not b:
            missing.append(f"{preset} on {era}: a probe wrote no findings")
            continue
        for hazard in sorted(set(a) | set(b)):
            pa, pb = a.get(hazard, "not probed"), b.get(hazard, "not probed")
            both = pa in ("present", "absent") and pb in ("present", "absent")
            if pa == pb:
                mark = "agree"
            elif not both:
                mark = WHY.get((preset, era, hazard), "one side cannot test it")
            elif (preset, era, hazard) in WHY:
                mark = "differ: " + WHY[(preset, era, hazard)]
            else:
                mark = "differ, unexplained"
                missing.append(f"{preset} on {era}: {hazard} is {pa} on the preset, {pb} on the SDK")
            lines.append(f"| `{preset}` | {era} | `{hazard}` | {pa} | {pb} | {mark} |")
    lines.append(END)
    return "\n".join(lines) + "\n", missing


def main(argv: list[str]) -> int:
    if len(argv) < 6 or argv[0] != "--out" or (len(argv) - 2) % 4:
        print(__doc__, file=sys.stderr)
        return 3
    out = argv[1]
    rest = argv[2:]
    pairs = [tuple(rest[i:i + 4]) for i in range(0, len(rest), 4)]
    block, missing = table(pairs)
    try:
        with open(out, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        text = ""
    if BEGIN in text and END in text:
        head, tail = text.split(BEGIN, 1)
        text = head + block + tail.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    for m in missing:
        print(f"presets: {m}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
