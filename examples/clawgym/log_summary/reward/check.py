"""Grades out/summary.json. Prints one JSON object of sub-scores in [0, 1]; the reward is their mean (reward.sh).

The workspace was written by the agent: the file may be missing, huge, a symlink, a FIFO, or malformed JSON. All of
that scores 0; this script never crashes. Counts must be JSON integers (true, "14" or 14.5 do not count as 14).
"""
import json
import os
import stat
import sys

MAX_BYTES = 64 * 1024
EXPECTED = {"lines": 14, "errors": 4, "warnings": 3}
TOP_ERROR = "database timeout"
ZERO = {"lines": 0, "errors": 0, "warnings": 0, "top_error": 0}


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
    text = read_small_text(os.path.join(ws, "out", "summary.json"))
    if text is None:
        return dict(ZERO)
    try:
        summary = json.loads(text)
    except (ValueError, RecursionError):
        return dict(ZERO)
    if not isinstance(summary, dict):
        return dict(ZERO)
    scores = {k: 1 if type(summary.get(k)) is int and summary.get(k) == v else 0 for k, v in EXPECTED.items()}
    top = summary.get("top_error")
    scores["top_error"] = 1 if isinstance(top, str) and top.strip().lower() == TOP_ERROR else 0
    return scores


def main():
    ws = sys.argv[1] if len(sys.argv) > 1 else "/root/.openclaw/workspace"
    try:
        scores = grade(ws)
    except Exception:  # noqa: BLE001 - a grader never crashes on what the agent wrote
        scores = dict(ZERO)
    print(json.dumps(scores, sort_keys=True))


if __name__ == "__main__":
    main()
