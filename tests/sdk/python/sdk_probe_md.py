"""Writes results/sdk-probe.md from `mcp-chaos probe --format json` outputs.

Usage:
  sdk_probe_md.py --out FILE --command CMD [--version NAME=VALUE]...
                  --server LABEL JSON EXIT STDERR [--server ...]

Each --server names one probed server: its label (a table row), the file
holding the probe's stdout (a JSON array of {hazard, title, verdict,
evidence}), the probe's exit code and the file holding its stderr. A probe
whose stdout is not such an array gets an `error` row with its exit code
and the first line of its stderr. The output depends on the inputs only
(no clock), so the same probe results give the same file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

VERDICTS = ("present", "absent", "untestable")


def load(json_path: str, exit_code: int, stderr_path: str) -> tuple[list[dict] | None, str]:
    """The probe's findings, or None and why they are missing."""
    why = f"probe exited {exit_code}"
    try:
        err = Path(stderr_path).read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        err = []
    if err:
        why += f": {err[0]}"
    try:
        data = json.loads(Path(json_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, why
    if not isinstance(data, list) or not all(
        isinstance(e, dict) and isinstance(e.get("hazard"), str) and e.get("verdict") in VERDICTS for e in data
    ):
        return None, why + " (stdout is not a list of {hazard, verdict} objects)"
    if exit_code not in (0, 1):
        return None, why
    return data, ""


def oneline(text: str) -> str:
    """Text on one line."""
    return " ".join(str(text).split())


def cell(text: str) -> str:
    """Text safe inside one Markdown table cell."""
    return oneline(text).replace("|", "\\|")


def render(
    command: str,
    versions: list[tuple[str, str]],
    servers: list[tuple[str, list[dict] | None, str]],
    notes: list[str],
) -> str:
    seen = [e["hazard"] for _, found, _ in servers for e in found or []]
    hazards = list(dict.fromkeys(seen))  # the order the probe reports them in
    titles: dict[str, str] = {}
    for _, found, _ in servers:
        for e in found or []:
            titles.setdefault(e["hazard"], e.get("title") or "")

    out = ["# mcp-chaos probe against the official MCP SDKs", ""]
    out += [
        "Each server below was started on loopback and probed with `mcp-chaos probe`;",
        "a cell is the probe's verdict for that hazard. Made by:",
        "",
        "```sh",
        command,
        "```",
        "",
        "| component | version |",
        "|---|---|",
    ]
    out += [f"| {cell(name)} | {cell(value)} |" for name, value in versions]
    out += ["", "| server | " + " | ".join(f"`{h}`" for h in hazards) + " |"]
    out.append("|---|" + "---|" * len(hazards))
    for label, found, why in servers:
        if found is None:
            out.append(f"| {cell(label)} | " + " | ".join("error" for _ in hazards) + " |")
            continue
        verdicts = {e["hazard"]: e["verdict"] for e in found}
        row = [f"**{v}**" if v == "present" else v for v in (verdicts.get(h, "not probed") for h in hazards)]
        out.append(f"| {cell(label)} | " + " | ".join(row) + " |")
    if titles:
        out += ["", "Hazards:", ""]
        out += [f"- `{h}`: {cell(titles[h])}" for h in hazards]
    if notes:
        out += ["", "Notes:", ""]
        out += [f"- {oneline(n)}" for n in notes]
    for label, found, why in servers:
        out += ["", f"## {label}", ""]
        if found is None:
            out.append(f"No verdicts: {oneline(why)}.")
            continue
        if not found:
            out.append("The probe reported no hazard.")
        for e in sorted(found, key=lambda e: (hazards.index(e["hazard"]), e.get("evidence", ""))):
            out.append(f"- `{e['hazard']}` {e['verdict']}: {oneline(e.get('evidence', ''))}")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True, help="the command that made the file, shown in it")
    ap.add_argument("--version", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--note", action="append", default=[], metavar="TEXT", help="a note below the table")
    ap.add_argument("--server", action="append", nargs=4, required=True, metavar=("LABEL", "JSON", "EXIT", "STDERR"))
    args = ap.parse_args()
    versions = []
    for v in args.version:
        name, sep, value = v.partition("=")
        if not sep:
            ap.error(f"--version {v!r}: expected NAME=VALUE")
        versions.append((name, value))
    servers = []
    for label, json_path, exit_code, stderr_path in args.server:
        try:
            code = int(exit_code)
        except ValueError:
            ap.error(f"--server {label}: EXIT {exit_code!r} is not an integer")
        found, why = load(json_path, code, stderr_path)
        servers.append((label, found, why))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(render(args.command, versions, servers, args.note), encoding="utf-8")
    failed = [label for label, found, _ in servers if found is None]
    if failed:
        print(f"sdk_probe_md: no verdicts for {', '.join(failed)} (see {args.out})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
