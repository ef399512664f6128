"""Reads check.py's JSON sub-scores on stdin, prints their mean rounded to 4 decimals (0 for anything malformed)."""
import json
import sys

try:
    lines = [line for line in sys.stdin.read().splitlines() if line.strip()]
    scores = json.loads(lines[-1])
    values = [float(v) for v in scores.values() if not isinstance(v, bool) and 0 <= float(v) <= 1]
    print(round(sum(values) / len(values), 4) if values and len(values) == len(scores) else 0)
except Exception:  # noqa: BLE001
    print(0)
