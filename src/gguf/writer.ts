import { closeSync, openSync, writeSync } from "node:fs";
import { InfraError } from "../core/errors.js";

/**
 * A GGUF v3 writer: header (magic, version, counts), metadata key/values, tensor infos, then tensor data, each tensor
 * aligned to `general.alignment` (32). Tensor payloads are produced by callbacks so large checkpoints stream through
 * without being held in memory.
 */
export enum GgufValueType {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}

/** ggml tensor types we emit. */
export enum GgmlType {
  F32 = 0,
  F16 = 1,
  BF16 = 30,
}

export const GGML_TYPE_BYTES: Record<GgmlType, number> = { [GgmlType.F32]: 4, [GgmlType.F16]: 2, [GgmlType.BF16]: 2 };

export type GgufValue =
  | { type: GgufValueType.UINT32 | GgufValueType.INT32 | GgufValueType.FLOAT32 | GgufValueType.UINT8 | GgufValueType.INT8 | GgufValueType.UINT16 | GgufValueType.INT16 | GgufValueType.FLOAT64; value: number }
  | { type: GgufValueType.UINT64 | GgufValueType.INT64; value: bigint }
  | { type: GgufValueType.BOOL; value: boolean }
  | { type: GgufValueType.STRING; value: string }
  | { type: GgufValueType.ARRAY; itemType: GgufValueType.STRING; value: readonly string[] }
  | { type: GgufValueType.ARRAY; itemType: GgufValueType.INT32 | GgufValueType.UINT32 | GgufValueType.FLOAT32; value: readonly number[] | Int32Array | Float32Array };

export const gguf = {
  u32: (value: number): GgufValue => ({ type: GgufValueType.UINT32, value }),
  i32: (value: number): GgufValue => ({ type: GgufValueType.INT32, value }),
  f32: (value: number): GgufValue => ({ type: GgufValueType.FLOAT32, value }),
  bool: (value: boolean): GgufValue => ({ type: GgufValueType.BOOL, value }),
  str: (value: string): GgufValue => ({ type: GgufValueType.STRING, value }),
  strings: (value: readonly string[]): GgufValue => ({ type: GgufValueType.ARRAY, itemType: GgufValueType.STRING, value }),
  i32s: (value: readonly number[] | Int32Array): GgufValue => ({ type: GgufValueType.ARRAY, itemType: GgufValueType.INT32, value }),
};

export interface GgufTensor {
  name: string;
  /** Shape in PyTorch order (outermost first); written reversed, as ggml's ne[0] is the innermost dimension. */
  shape: readonly number[];
  type: GgmlType;
  /** Writes exactly the tensor's bytes through `write` (called once, in tensor order). */
  writeData(write: (bytes: Uint8Array) => void): void;
}

export const GGUF_ALIGNMENT = 32;

/** Growable little-endian byte buffer for the header. */
class ByteSink {
  private buf = Buffer.allocUnsafe(1 << 16);
  length = 0;

  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  u8(v: number): void {
    this.reserve(1);
    this.buf.writeUInt8(v, this.length);
    this.length += 1;
  }
  u32(v: number): void {
    this.reserve(4);
    this.buf.writeUInt32LE(v >>> 0, this.length);
    this.length += 4;
  }
  i32(v: number): void {
    this.reserve(4);
    this.buf.writeInt32LE(v, this.length);
    this.length += 4;
  }
  f32(v: number): void {
    this.reserve(4);
    this.buf.writeFloatLE(v, this.length);
    this.length += 4;
  }
  f64(v: number): void {
    this.reserve(8);
    this.buf.writeDoubleLE(v, this.length);
    this.length += 8;
  }
  u64(v: bigint | number): void {
    this.reserve(8);
    this.buf.writeBigUInt64LE(BigInt(v), this.length);
    this.length += 8;
  }
  i64(v: bigint): void {
    this.reserve(8);
    this.buf.writeBigInt64LE(v, this.length);
    this.length += 8;
  }
  str(s: string): void {
    const n = Buffer.byteLength(s, "utf8");
    this.u64(n);
    this.reserve(n);
    this.buf.write(s, this.length, "utf8");
    this.length += n;
  }
  zeros(n: number): void {
    this.reserve(n);
    this.buf.fill(0, this.length, this.length + n);
    this.length += n;
  }
  bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

function writeValue(sink: ByteSink, v: GgufValue): void {
  switch (v.type) {
    case GgufValueType.UINT8:
      return sink.u8(v.value);
    case GgufValueType.UINT32:
      return sink.u32(v.value);
    case GgufValueType.INT32:
      return sink.i32(v.value);
    case GgufValueType.FLOAT32:
      return sink.f32(v.value);
    case GgufValueType.FLOAT64:
      return sink.f64(v.value);
    case GgufValueType.UINT64:
      return sink.u64(v.value);
    case GgufValueType.INT64:
      return sink.i64(v.value);
    case GgufValueType.BOOL:
      return sink.u8(v.value ? 1 : 0);
    case GgufValueType.STRING:
      return sink.str(v.value);
    case GgufValueType.ARRAY:
      sink.u32(v.itemType);
      sink.u64(v.value.length);
      if (v.itemType === GgufValueType.STRING) for (const s of v.value) sink.str(s);
      else if (v.itemType === GgufValueType.FLOAT32) for (const x of v.value) sink.f32(x);
      else if (v.itemType === GgufValueType.UINT32) for (const x of v.value) sink.u32(x);
      else for (const x of v.value) sink.i32(x);
      return;
    default:
      throw new InfraError("internal", `unsupported GGUF value type ${(v as { type: number }).type}`);
  }
}

export function tensorByteLength(t: Pick<GgufTensor, "shape" | "type">): number {
  return t.shape.reduce((a, b) => a * b, 1) * GGML_TYPE_BYTES[t.type];
}

const align = (n: number): number => Math.ceil(n / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;

/** Writes a complete GGUF v3 file. Returns its size in bytes. */
export function writeGguf(file: string, metadata: ReadonlyMap<string, GgufValue>, tensors: readonly GgufTensor[]): number {
  const sink = new ByteSink();
  sink.u32(0x46554747); // "GGUF" read as little-endian u32
  sink.u32(3);
  sink.u64(tensors.length);
  sink.u64(metadata.size + (metadata.has("general.alignment") ? 0 : 1));
  if (!metadata.has("general.alignment")) {
    sink.str("general.alignment");
    sink.u32(GgufValueType.UINT32);
    sink.u32(GGUF_ALIGNMENT);
  }
  for (const [key, value] of metadata) {
    sink.str(key);
    sink.u32(value.type);
    writeValue(sink, value);
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    sink.str(t.name);
    sink.u32(t.shape.length);
    for (let d = t.shape.length - 1; d >= 0; d--) sink.u64(t.shape[d] ?? 0);
    sink.u32(t.type);
    sink.u64(offset);
    offsets.push(offset);
    offset = align(offset + tensorByteLength(t));
  }
  sink.zeros(align(sink.length) - sink.length);

  const fd = openSync(file, "w");
  try {
    let pos = 0;
    const write = (bytes: Uint8Array): void => {
      let done = 0;
      while (done < bytes.byteLength) done += writeSync(fd, bytes, done, bytes.byteLength - done);
      pos += bytes.byteLength;
    };
    write(sink.bytes());
    const dataStart = pos;
    const pad = Buffer.alloc(GGUF_ALIGNMENT);
    tensors.forEach((t, i) => {
      const want = dataStart + (offsets[i] ?? 0);
      if (pos < want) write(pad.subarray(0, want - pos));
      const before = pos;
      t.writeData(write);
      const expected = tensorByteLength(t);
      if (pos - before !== expected) throw new InfraError("internal", `GGUF tensor ${t.name}: wrote ${pos - before} bytes, expected ${expected}`);
    });
    return pos;
  } finally {
    closeSync(fd);
  }
}
