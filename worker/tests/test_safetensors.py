"""Safetensors: round trips per dtype, byte layout, sharded index, malformed files."""
from __future__ import annotations

import json
import struct
import tempfile
import unittest
from pathlib import Path

import torch

from harnessrl_worker import safetensors as st
from harnessrl_worker.errors import WorkerError


class SafetensorsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self) -> None:
        self.tmp.cleanup()

    def test_round_trip_every_dtype_bit_exact(self) -> None:
        gen = torch.Generator().manual_seed(0)
        base = torch.randn(3, 5, generator=gen)
        tensors = {
            "f32": base,
            "f16": base.to(torch.float16),
            "bf16": base.to(torch.bfloat16),
            "f64": base.double(),
            "i64": torch.arange(-7, 8, dtype=torch.int64),
            "i32": torch.tensor([2**31 - 1, -(2**31)], dtype=torch.int32),
            "u8": torch.tensor([0, 255, 7], dtype=torch.uint8),
            "bool": torch.tensor([True, False]),
            "scalar": torch.tensor(3.5),
            "empty": torch.zeros(0, 4),
            "noncontig": base.t(),
        }
        path = self.dir / "x.safetensors"
        st.save_file(tensors, path)
        back = st.load_file(path)
        self.assertEqual(set(back), set(tensors))
        for name, t in tensors.items():
            self.assertEqual(back[name].dtype, t.dtype, name)
            self.assertEqual(tuple(back[name].shape), tuple(t.shape), name)
            self.assertTrue(torch.equal(back[name], t), name)

    def test_layout_matches_the_format(self) -> None:
        # bf16 of 1.0 is 0x3F80, stored little-endian; the header is padded so data starts 8-byte aligned.
        path = self.dir / "one.safetensors"
        st.save_file({"w": torch.ones(2, dtype=torch.bfloat16)}, path)
        raw = path.read_bytes()
        (n,) = struct.unpack("<Q", raw[:8])
        self.assertEqual((8 + n) % 8, 0)
        header = json.loads(raw[8 : 8 + n])
        self.assertEqual(header["w"], {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]})
        self.assertEqual(raw[8 + n :], b"\x80\x3f\x80\x3f")

    def test_reads_a_hand_written_file(self) -> None:
        header = json.dumps({"__metadata__": {"k": "v"}, "a": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]}, "b": {"dtype": "F16", "shape": [1], "data_offsets": [16, 18]}}).encode()
        data = struct.pack("<qq", 5, -3) + struct.pack("<e", 0.5)
        path = self.dir / "hand.safetensors"
        path.write_bytes(struct.pack("<Q", len(header)) + header + data)
        h = st.read_header(path)
        self.assertEqual(h.metadata, {"k": "v"})
        t = st.load_file(path)
        self.assertEqual(t["a"].tolist(), [5, -3])
        self.assertEqual(t["b"].item(), 0.5)

    def test_sharded_index(self) -> None:
        st.save_file({"a": torch.ones(2)}, self.dir / "model-00001-of-00002.safetensors")
        st.save_file({"b": torch.zeros(3)}, self.dir / "model-00002-of-00002.safetensors")
        (self.dir / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}))
        t = st.load_checkpoint(self.dir)
        self.assertEqual(t["a"].tolist(), [1.0, 1.0])
        self.assertEqual(t["b"].tolist(), [0.0, 0.0, 0.0])

    def test_malformed_files_raise_worker_errors(self) -> None:
        bad = self.dir / "bad.safetensors"
        bad.write_bytes(b"\x01\x00")
        with self.assertRaises(WorkerError) as e:
            st.read_header(bad)
        self.assertEqual(e.exception.code, "invalid_model")
        header = json.dumps({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
        bad.write_bytes(struct.pack("<Q", len(header)) + header + b"\x00" * 8)  # truncated data
        with self.assertRaises(WorkerError):
            st.read_header(bad)
        with self.assertRaises(WorkerError) as e2:
            st.read_header(self.dir / "missing.safetensors")
        self.assertEqual(e2.exception.code, "not_found")


if __name__ == "__main__":
    unittest.main()
