#!/usr/bin/env python3
"""tests/zero-matrix/report.py WORK OUT --seeds N --heavy-seeds N --deploy-seeds N

Writes OUT/report.md and OUT/cells.json from the cells tests/zero-matrix/run
left in WORK (WORK/CELL/{sims,heavy,deploy}/summary.json and
compare-meta.json). Per cell: its commands, operations, failed, degraded,
drops planned and applied, CPU seconds; then every scenario x deployment of
a cell that failed an operation, by cause, with the command that reproduces
its first failing seed. Exits 1 when any cell failed an operation."""

import json
import shlex
import sys
from pathlib import Path


def args():
    a = sys.argv[1:]
    if len(a) != 8:
        sys.exit(__doc__)
    opts = dict(zip(a[2::2], a[3::2]))
    return Path(a[0]), Path(a[1]), opts


def cell_rows(work):
    for cell in sorted(p for p in work.iterdir() if p.is_dir()):
        parts = []
        for part in ("sims", "heavy", "deploy"):
            d = cell / part
            if (d / "summary.json").exists():
                parts.append((part, json.loads((d / "summary.json").read_text()),
                              json.loads((d / "compare-meta.json").read_text())))
        yield cell.name, parts


def repro(run):
    """The `mcp-chaos run` command of one run."""
    scen = run["scenario"]
    if scen.startswith("deploy-"):
        path = "sims/deploy/" + scen[len("deploy-"):] + ".toml"
    else:
        path = "sims/" + scen + ".toml"
    cmd = ["mcp-chaos", "run", "--scenario", path, "--seed", str(run["seed"]),
           "--server", run["server"], "--clients", run["clients"]]
    for o in run["overrides"]:
        cmd += ["--set", o]
    return " ".join(shlex.quote(c) for c in cmd)


def main():
    work, out, opts = args()
    cells = []
    failing = []
    for name, parts in cell_rows(work):
        era, polling, inter = name.split(".")
        c = {"cell": name, "era": era, "polling": polling,
             "intermediary": inter.removeprefix("intermediary-"),
             "runs": 0, "operations": 0, "failed": 0, "degraded": 0,
             "drops_planned": 0, "drops_applied": 0, "cpu_s": 0.0,
             "commands": [], "causes": {}}
        for part, summary, meta in parts:
            cmd = [c for c in meta["command"]]
            cmd[0] = "mcp-chaos"
            # The work directory is this machine's: the page names it as
            # the script's default, relative to the checkout.
            cmd = [x.replace(str(work), "target/zero-matrix") for x in cmd]
            c["commands"].append(" ".join(shlex.quote(x) for x in cmd))
            c["cpu_s"] += sum(r[4] for r in meta["runs"]) / 1000.0
            first = {}
            for r in summary["runs"]:
                m = r["metrics"]
                c["runs"] += 1
                c["operations"] += m["operations"]
                c["failed"] += m["ops_failed"]
                c["degraded"] += m["ops_degraded"]
                c["drops_planned"] += r["faults"]["planned"].get("drop", 0)
                c["drops_applied"] += r["faults"]["applied"].get("drop", 0)
                for cause, n in m["failures_by_cause"].items():
                    c["causes"][cause] = c["causes"].get(cause, 0) + n
                if m["ops_failed"]:
                    label = r.get("deployment") or "as written"
                    key = (r["scenario"], label)
                    f = first.setdefault(key, {"runs": 0, "failed": 0, "causes": {},
                                               "repro": repro(r), "seed": r["seed"]})
                    f["runs"] += 1
                    f["failed"] += m["ops_failed"]
                    for cause, n in m["failures_by_cause"].items():
                        f["causes"][cause] = f["causes"].get(cause, 0) + n
            for (scen, label), f in sorted(first.items()):
                failing.append((name, scen, label, f))
        c["cpu_s"] = round(c["cpu_s"], 1)
        cells.append(c)

    def causes_text(d):
        return ", ".join(f"`{k}` {v}" for k, v in sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))) or "–"

    total_cpu = sum(c["cpu_s"] for c in cells)
    total_ops = sum(c["operations"] for c in cells)
    total_failed = sum(c["failed"] for c in cells)
    lines = [
        "# The zero over the cross product",
        "",
        "The zero configuration (guarded; durable keys; transactional effects; "
        "`keys+cursors` clients on 2025-11-25, `tasks+keys` on 2026-07-28; behind "
        "replicas a shared durable store and `on_dead_upstream = repin`) over era × "
        "deployment × polling × intermediary. Written by `tests/zero-matrix/run`; "
        "each cell's commands are listed below, and each failing scenario names the "
        "`mcp-chaos run` that reproduces its first failing seed.",
        "",
        f"Seeds: {opts['--seeds']} per scenario of `sims/` (mixed-fleet and "
        f"thundering-herd: {opts['--heavy-seeds']}), {opts['--deploy-seeds']} per "
        "scenario of `sims/deploy/`. Deployment axis: each scenario as written, and "
        "(`sims/*.toml`) 3 replicas round robin on a shared durable store; the "
        "`sims/deploy/` scenarios run as written (they are deployments). Polling: "
        "off, or `poll_after = 3` with `poll_retry_ms = 100` (2025-11-25 only: the "
        "2026-07-28 wire has no stream to pause).",
        "",
        f"**{total_failed:,} failed of {total_ops:,} operations** over {len(cells)} cells, "
        f"{sum(c['runs'] for c in cells):,} runs, {total_cpu / 60:.1f} CPU-minutes of "
        "simulation.",
        "",
        "| era | polling | intermediary | runs | operations | failed | degraded | drops planned | drops applied | causes | CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        lines.append(
            f"| {c['era']} | {c['polling']} | {c['intermediary']} | {c['runs']:,} | "
            f"{c['operations']:,} | {c['failed']:,} | {c['degraded']:,} | "
            f"{c['drops_planned']:,} | {c['drops_applied']:,} | {causes_text(c['causes'])} | "
            f"{c['cpu_s']:,.0f} |")
    lines += ["", "## Where an operation failed", ""]
    if not failing:
        lines.append("Nowhere: every cell failed 0.")
    else:
        lines += [
            "Each is a residual listed in `sims/residuals/README.md` with its cause, "
            "minimal scenario and remedy.",
            "",
            "| cell | scenario | deployment | failing runs | failed | causes | first failing seed |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, scen, label, f in failing:
            lines.append(
                f"| {name} | {scen} | {label} | {f['runs']} | {f['failed']} | "
                f"{causes_text(f['causes'])} | `{f['repro']}` |")
    lines += ["", "## Commands", ""]
    for c in cells:
        lines.append(f"- {c['cell']}:")
        for cmd in c["commands"]:
            lines.append(f"  - `{cmd}`")
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text("\n".join(lines) + "\n")
    (out / "cells.json").write_text(json.dumps(cells, indent=1, sort_keys=True) + "\n")
    print(f"zero matrix: {total_failed} failed of {total_ops} operations in {len(cells)} cells "
          f"({total_cpu / 60:.1f} CPU-minutes); {out / 'report.md'}")
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main())
