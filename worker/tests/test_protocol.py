"""The stdio protocol, in process: framing, op dispatch, errors that do not stop the worker, shutdown."""
from __future__ import annotations

import io
import json
import tempfile
import unittest
from pathlib import Path
from typing import Any, Dict, List, Tuple

import torch

from harnessrl_worker import PROTOCOL_VERSION
from harnessrl_worker.protocol import encode_message, read_message
from harnessrl_worker.server import serve
from harnessrl_worker.state import WorkerSettings, WorkerState

from .test_packed import pack_paths


def run(requests: List[bytes]) -> List[Tuple[Dict[str, Any], Dict[str, torch.Tensor]]]:
    state = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1))
    out = io.BytesIO()
    serve(state, io.BytesIO(b"".join(requests)), out)
    out.seek(0)
    responses = []
    while (msg := read_message(out)) is not None:
        responses.append((msg.header, msg.frames))
    return responses


def req(id_: Any, op: str, args: Dict[str, Any] | None = None, frames: Dict[str, torch.Tensor] | None = None) -> bytes:
    return encode_message({"id": id_, "op": op, "args": args or {}}, frames)


class ProtocolTest(unittest.TestCase):
    def test_frames_round_trip(self) -> None:
        frames = {"a": torch.tensor([1.5, -2.0]), "b": torch.tensor([[1, 2], [3, 4]], dtype=torch.int32), "c": torch.tensor([255], dtype=torch.uint8), "e": torch.zeros(0)}
        raw = encode_message({"id": 1, "x": "y"}, frames) + encode_message({"id": 2})
        stream = io.BytesIO(raw)
        first = read_message(stream)
        second = read_message(stream)
        assert first is not None and second is not None
        self.assertEqual(first.header, {"id": 1, "x": "y"})
        for k, v in frames.items():
            self.assertTrue(torch.equal(first.frames[k], v), k)
        self.assertEqual(second.header, {"id": 2})
        self.assertIsNone(read_message(stream))
        # The wire layout: one JSON line, then the raw little-endian bytes.
        line, rest = encode_message({"id": 3}, {"t": torch.tensor([1], dtype=torch.int32)}).split(b"\n", 1)
        self.assertEqual(json.loads(line)["frames"], [{"name": "t", "dtype": "int32", "shape": [1], "nbytes": 4}])
        self.assertEqual(rest, b"\x01\x00\x00\x00")

    def test_session_init_logprobs_save_and_errors_keep_the_worker_alive(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            model_dir = Path(tmp) / "m"
            row, node_paths = pack_paths([[257, 1, 2, 3, 4], [257, 1, 2, 9, 9, 9]])
            batch = {"tokens": row.tokens.to(torch.int32), "parent": row.parent.to(torch.int32), "positions": row.positions.to(torch.int32)}
            bad_positions = dict(batch, positions=torch.zeros(row.length, dtype=torch.int32))
            responses = run(
                [
                    req(1, "hello"),
                    req(2, "logprobs", {"row_lengths": [row.length]}, batch),
                    req(3, "init", {"preset": "tiny-1m", "seed": 3, "out": str(model_dir), "chat_template": "T"}),
                    req(4, "logprobs", {"row_lengths": [row.length]}, batch),
                    req(5, "logprobs", {"row_lengths": [row.length]}, bad_positions),
                    b"this is not json\n",
                    encode_message({"id": 6, "op": "logprobs", "args": {"row_lengths": [1]}, "frames": [{"name": "tokens", "dtype": "nope", "shape": [1], "nbytes": 4}]})[:-1] + b"\n\x00\x00\x00\x00",
                    req(7, "frobnicate"),
                    req("s", "save", {"dir": str(Path(tmp) / "v2"), "policy_version": 2}),
                    req(8, "load", {"dir": str(Path(tmp) / "v2")}),
                    req(81, "logprobs", {"row_lengths": [row.length]}, batch),
                    req(9, "logprobs", {"row_lengths": [row.length], "temperature": 0.5}, batch),
                    req(10, "load", {"dir": str(Path(tmp) / "missing")}),
                    req(11, "shutdown"),
                    req(12, "hello"),
                ]
            )
        by_id = {h["id"]: (h, f) for h, f in responses}
        self.assertEqual(len(responses), 14)  # 13 requests answered + one id-less error; nothing after shutdown
        hello = by_id[1][0]["result"]
        self.assertEqual(hello["protocol"], PROTOCOL_VERSION)
        self.assertIn("logprobs", hello["ops"])
        self.assertEqual(by_id[2][0]["error"]["code"], "no_model")
        self.assertTrue(by_id[3][0]["ok"])
        lp = by_id[4][1]["logprobs"]
        self.assertEqual(lp.shape, (row.length,))
        self.assertEqual(by_id[4][1]["entropy"].dtype, torch.float32)
        shared = node_paths[0][:3]
        self.assertTrue(torch.equal(lp[shared], lp[node_paths[1][:3]]))
        self.assertEqual(by_id[5][0]["error"]["code"], "bad_request")
        self.assertEqual(by_id[None][0]["error"]["code"], "bad_message")
        self.assertEqual(by_id[6][0]["error"]["code"], "bad_request")
        self.assertEqual(by_id[7][0]["error"]["code"], "unknown_op")
        self.assertEqual(by_id["s"][0]["result"]["policy_version"], 2)
        self.assertEqual(by_id[8][0]["result"]["policy_version"], 2)
        # Reloaded weights give the same numbers; temperature changes them.
        self.assertTrue(torch.equal(by_id[81][1]["logprobs"], lp))
        self.assertFalse(torch.allclose(by_id[9][1]["logprobs"], lp))
        self.assertEqual(by_id[10][0]["error"]["code"], "not_found")
        self.assertFalse(by_id[10][0]["error"]["retryable"])
        self.assertTrue(by_id[11][0]["result"]["stopping"])
        self.assertNotIn(12, by_id)


if __name__ == "__main__":
    unittest.main()
