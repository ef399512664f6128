"""Grades out/revenue.csv. Prints one JSON object of sub-scores in [0, 1]; the reward is their mean (reward.sh).

The workspace was written by the agent: the output may be missing, huge, binary, a directory, a symlink (e.g. to
/dev/zero) or a FIFO. Anything but a small regular UTF-8 file scores 0 on every check; this script never crashes.
"""
import csv
import io
import json
import os
import re
import stat
import sys

EXPECTED = {"east": 32.25, "north": 32.00, "south": 27.00}
MAX_BYTES = 64 * 1024
ZERO = {"header": 0, "revenue": 0, "sorted": 0, "two_decimals": 0}


def read_small_text(path):
    """The file's text, or None unless it is a regular file (not a symlink) of at most MAX_BYTES of UTF-8."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            return None
        return data.decode("utf-8")
    except (OSError, ValueError):
        return None


def grade(ws):
    text = read_small_text(os.path.join(ws, "out", "revenue.csv"))
    if text is None:
        return dict(ZERO)
    rows = [r for r in csv.reader(io.StringIO(text)) if any(c.strip() for c in r)]
    if not rows:
        return dict(ZERO)
    header = 1 if [c.strip() for c in rows[0]] == ["region", "revenue"] else 0
    body = rows[1:] if header else rows
    seen = {}
    fields = []
    for r in body:
        if len(r) != 2:
            continue
        region, value = r[0].strip(), r[1].strip()
        fields.append(value)
        try:
            seen.setdefault(region, float(value))
        except ValueError:
            pass
    correct = sum(1 for k, v in EXPECTED.items() if k in seen and abs(seen[k] - v) < 0.005)
    regions = [r[0].strip() for r in body if r]
    return {
        "header": header,
        "revenue": round(correct / len(EXPECTED), 4),
        "sorted": 1 if regions == sorted(EXPECTED) else 0,
        "two_decimals": 1 if fields and len(fields) == len(body) and all(re.fullmatch(r"\d+\.\d\d", f) for f in fields) else 0,
    }


def main():
    ws = sys.argv[1] if len(sys.argv) > 1 else "/root/.openclaw/workspace"
    try:
        scores = grade(ws)
    except Exception:  # noqa: BLE001 - a grader never crashes on what the agent wrote
        scores = dict(ZERO)
    print(json.dumps(scores, sort_keys=True))


if __name__ == "__main__":
    main()
