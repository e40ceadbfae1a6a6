"""Reads one `mcp-chaos probe --format json` output for tests/sdk/run.

  probe_json.py verdicts FILE               prints hazard=verdict pairs (or why none)
  probe_json.py has FILE HAZARD VERDICT     exit 0 when that hazard has that verdict
  probe_json.py none-present FILE           exit 0 when no hazard is present

Exit 1 when the answer is no or FILE is not the probe's JSON list.
"""

import json
import sys


def findings(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        found = json.load(f)
    if not isinstance(found, list) or not all(isinstance(e, dict) for e in found):
        raise ValueError("not a JSON list of objects")
    return found


def main(argv: list[str]) -> int:
    match argv:
        case ["verdicts", path]:
            try:
                print(" ".join(f"{e.get('hazard')}={e.get('verdict')}" for e in findings(path)) or "(no findings)")
            except (OSError, ValueError) as e:
                print(f"stdout is not the probe's JSON list ({e})")
                return 1
            return 0
        case ["has", path, hazard, verdict]:
            try:
                return 0 if any(e.get("hazard") == hazard and e.get("verdict") == verdict for e in findings(path)) else 1
            except (OSError, ValueError):
                return 1
        case ["none-present", path]:
            try:
                return 1 if any(e.get("verdict") == "present" for e in findings(path)) else 0
            except (OSError, ValueError):
                return 1
    print(__doc__, file=sys.stderr)
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
