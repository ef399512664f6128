"""Which vocabulary rows the engines sample (docs/model-dir.md, "Padded vocabulary rows").

A checkpoint's embedding may have more rows than its tokenizer has ids (Qwen3: 151,936 rows, 151,669 ids). The engines
never sample an id without text (the proxy could not decode it), so the distribution they sample from is the model's
softmax over the ids with text; the trainer scores with the same one, else every logprob differs by
log(1 − textless mass). The rule is the TypeScript side's (src/tokenizer/textless.ts), read from the same files:
an id has text iff tokenizer.json names it (`model.vocab` or `added_tokens`; the byte tokenizer: 256 bytes + its
special tokens). A directory without a tokenizer.json this reads keeps every row.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional, Set


def token_ids_with_text(directory: Path) -> Optional[Set[int]]:
    """The ids tokenizer.json defines; None when there is no tokenizer.json or it is neither format we read."""
    path = directory / "tokenizer.json"
    if not path.exists():
        return None
    try:
        obj = json.loads(path.read_text("utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(obj, dict):
        return None
    meta = obj.get("harnessrl")
    if isinstance(meta, dict) and meta.get("type") == "bytes":
        return set(range(256 + len(meta.get("special_tokens") or [])))
    model = obj.get("model")
    vocab = model.get("vocab") if isinstance(model, dict) else None
    if not isinstance(vocab, dict):
        return None
    ids = {v for v in vocab.values() if isinstance(v, int)}
    ids.update(t["id"] for t in obj.get("added_tokens") or [] if isinstance(t, dict) and isinstance(t.get("id"), int))
    return ids


def textless_ids(directory: Path, rows: int) -> List[int]:
    """Ids in [0, rows) without text in the directory's tokenizer (ascending); [] when every row has text or the
    tokenizer is unknown."""
    ids = token_ids_with_text(directory)
    if ids is None:
        return []
    return [i for i in range(rows) if i not in ids]
