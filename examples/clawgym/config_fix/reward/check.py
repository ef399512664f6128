"""Grades app/config.json. Prints one JSON object of sub-scores in [0, 1]; the reward is their mean (reward.sh).

The workspace was written by the agent: the file may be missing, huge, a symlink, a FIFO, or JSON built to break
parsers (nesting deep enough to exhaust the recursion limit, NaN, 10,000-digit numbers). All of that scores 0; this
script never crashes. Unless the file parses as a JSON object, every check is 0 (doing nothing scores 0).
"""
import json
import os
import stat
import sys

MAX_BYTES = 64 * 1024
KEPT = {"service": "inventory", "workers": 4, "database": {"host": "db.internal", "port": 5432}}
ZERO = {"valid_json": 0, "port": 0, "debug_off": 0, "kept": 0}


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


def reject_constant(name):
    raise ValueError("not JSON: " + name)


def same(a, b):
    """JSON equality that tells true from 1 and 4 from 4.0 (Python's == does not)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def grade(ws):
    text = read_small_text(os.path.join(ws, "app", "config.json"))
    if text is None:
        return dict(ZERO)
    try:
        config = json.loads(text, parse_constant=reject_constant)
    except (ValueError, RecursionError):
        return dict(ZERO)
    if not isinstance(config, dict):
        return dict(ZERO)
    kept = sum(1 for k, v in KEPT.items() if k in config and same(config[k], v))
    return {
        "valid_json": 1,
        "port": 1 if same(config.get("port"), 8080) else 0,
        "debug_off": 1 if config.get("debug") is False else 0,
        "kept": round(kept / len(KEPT), 4),
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
