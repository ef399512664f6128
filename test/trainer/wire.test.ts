import { describe, expect, it } from "vitest";
import { UserError } from "../../src/core/errors.js";
import { packBatch, splitRows } from "../../src/trainer/batch-frames.js";
import { MessageDecoder, encodeMessage } from "../../src/trainer/wire.js";
import { batch, flatRow, treeRow } from "./fixtures.js";

describe("worker wire format", () => {
  const frames = new Map<string, Float32Array | Int32Array | Uint8Array | BigInt64Array>([
    ["f", Float32Array.from([1.5, -2, 3.25])],
    ["i", Int32Array.from([-1, 0, 2147483647])],
    ["u", Uint8Array.from([0, 255])],
    ["l", BigInt64Array.from([-5n, 1n << 40n])],
    ["empty", new Float32Array(0)],
  ]);

  it("lays a message out as one JSON line followed by raw little-endian frames", () => {
    const [line, ...blobs] = encodeMessage({ id: 1, op: "x" }, new Map([["t", Int32Array.from([1, 256])]]));
    expect(JSON.parse((line as Buffer).toString())).toEqual({ id: 1, op: "x", frames: [{ name: "t", dtype: "int32", shape: [2], nbytes: 8 }] });
    expect(Buffer.concat(blobs)).toEqual(Buffer.from([1, 0, 0, 0, 0, 1, 0, 0]));
  });

  it("decodes messages split at every possible chunk boundary", () => {
    const wire = Buffer.concat([...encodeMessage({ id: 1, ok: true, result: { a: 1 } }, frames), ...encodeMessage({ id: 2, ok: true, result: {} })]);
    for (const step of [1, 3, 7, 64, wire.length]) {
      const decoder = new MessageDecoder();
      const got = [];
      for (let i = 0; i < wire.length; i += step) got.push(...decoder.push(wire.subarray(i, i + step)));
      expect(got.map((m) => m.header.id)).toEqual([1, 2]);
      const first = got[0];
      expect(first?.header).toEqual({ id: 1, ok: true, result: { a: 1 } });
      const values = (a: ArrayLike<number | bigint> | undefined): (number | bigint)[] => Array.from(a ?? []);
      for (const [name, a] of frames) expect(values(first?.frames.get(name))).toEqual(values(a));
      expect(first?.frames.get("l")).toBeInstanceOf(BigInt64Array);
    }
  });

  it("rejects a line that is not JSON", () => {
    expect(() => new MessageDecoder().push(Buffer.from("Traceback (most recent call last)\n"))).toThrow(/not JSON/);
  });
});

describe("packed batch frames", () => {
  it("concatenates rows per field and splits results back per row", () => {
    const { row } = treeRow([[1, 2, 3], [1, 2, 4]]);
    const b = batch([row, flatRow([7, 8])]);
    const { rowLengths, frames } = packBatch(b, ["tokens", "parent", "positions", "oldLogprobs"]);
    expect(rowLengths).toEqual([4, 2]);
    expect(Array.from(frames.get("tokens") as Int32Array)).toEqual([1, 2, 3, 4, 7, 8]);
    expect(Array.from(frames.get("parent") as Int32Array)).toEqual([-1, 0, 1, 1, -1, 0]);
    expect(Array.from(frames.get("positions") as Int32Array)).toEqual([0, 1, 2, 2, 0, 1]);
    expect(frames.get("old_logprobs")).toBeInstanceOf(Float32Array);
    const split = splitRows(Float32Array.from([0, 1, 2, 3, 4, 5]), rowLengths);
    expect(split.map((a) => Array.from(a))).toEqual([[0, 1, 2, 3], [4, 5]]);
  });

  it("refuses rows whose arrays disagree in length", () => {
    const row = flatRow([1, 2, 3]);
    row.parent = Int32Array.from([-1, 0]);
    expect(() => packBatch(batch([row]), ["tokens", "parent"])).toThrow(UserError);
  });
});
