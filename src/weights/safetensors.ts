import { closeSync, existsSync, openSync, readFileSync, readSync, writeSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { UserError } from "../core/errors.js";

/**
 * Safetensors without extra packages: an 8-byte little-endian header length, a JSON header mapping tensor names to
 * {dtype, shape, data_offsets} (offsets relative to the end of the header), then raw little-endian tensor bytes.
 * Reading is lazy (header first, tensor bytes on demand) so exporters can stream multi-GB checkpoints.
 */
export type SafetensorsDtype = "F32" | "F16" | "BF16" | "F64" | "I64" | "I32" | "I16" | "I8" | "U8" | "BOOL";

export const DTYPE_BYTES: Record<SafetensorsDtype, number> = { F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, BOOL: 1 };

export interface TensorInfo {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** Absolute byte offset of the tensor data in its file. */
  offset: number;
  byteLength: number;
  file: string;
}

const entrySchema = z.object({
  dtype: z.enum(["F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"]),
  shape: z.array(z.number().int().nonnegative()),
  data_offsets: z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]),
});

const MAX_HEADER = 100 * 1024 * 1024;

/** Reads the header of one safetensors file. */
export function readSafetensorsHeader(file: string): { tensors: TensorInfo[]; metadata: Record<string, string> } {
  const fd = openSync(file, "r");
  try {
    const lenBuf = Buffer.alloc(8);
    if (readSync(fd, lenBuf, 0, 8, 0) !== 8) throw new UserError("invalid_safetensors", `${file}: shorter than 8 bytes`);
    const headerLen = Number(lenBuf.readBigUInt64LE(0));
    if (headerLen <= 0 || headerLen > MAX_HEADER) throw new UserError("invalid_safetensors", `${file}: implausible header length ${headerLen}`);
    const headerBuf = Buffer.alloc(headerLen);
    if (readSync(fd, headerBuf, 0, headerLen, 8) !== headerLen) throw new UserError("invalid_safetensors", `${file}: truncated header`);
    let raw: unknown;
    try {
      raw = JSON.parse(headerBuf.toString("utf8"));
    } catch (e) {
      throw new UserError("invalid_safetensors", `${file}: header is not JSON`, { cause: e });
    }
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new UserError("invalid_safetensors", `${file}: header is not an object`);
    const dataStart = 8 + headerLen;
    const tensors: TensorInfo[] = [];
    let metadata: Record<string, string> = {};
    for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
      if (name === "__metadata__") {
        metadata = z.record(z.string(), z.string()).parse(value);
        continue;
      }
      const parsed = entrySchema.safeParse(value);
      if (!parsed.success) throw new UserError("invalid_safetensors", `${file}: tensor "${name}": ${parsed.error.message}`);
      const { dtype, shape, data_offsets } = parsed.data;
      const [begin, end] = data_offsets;
      const expected = shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[dtype];
      if (end - begin !== expected) throw new UserError("invalid_safetensors", `${file}: tensor "${name}" has ${end - begin} bytes, shape needs ${expected}`);
      tensors.push({ name, dtype, shape, offset: dataStart + begin, byteLength: expected, file });
    }
    return { tensors, metadata };
  } finally {
    closeSync(fd);
  }
}

/** The weight files of a model directory: `model.safetensors`, or the shards listed by `model.safetensors.index.json`. */
export function modelWeightFiles(modelDir: string): string[] {
  const single = join(modelDir, "model.safetensors");
  if (existsSync(single)) return [single];
  const indexPath = join(modelDir, "model.safetensors.index.json");
  if (!existsSync(indexPath)) throw new UserError("weights_not_found", `${modelDir}: neither model.safetensors nor model.safetensors.index.json exists`);
  const index = z.object({ weight_map: z.record(z.string(), z.string()) }).safeParse(JSON.parse(readFileSync(indexPath, "utf8")));
  if (!index.success) throw new UserError("invalid_safetensors", `${indexPath}: ${index.error.message}`);
  return [...new Set(Object.values(index.data.weight_map))].sort().map((f) => join(modelDir, f));
}

/** All tensors of a model directory by name (headers only). */
export function readModelTensors(modelDir: string): Map<string, TensorInfo> {
  const out = new Map<string, TensorInfo>();
  for (const file of modelWeightFiles(modelDir)) {
    for (const t of readSafetensorsHeader(file).tensors) out.set(t.name, t);
  }
  return out;
}

/** Reads a tensor's raw bytes. */
export function readTensorBytes(t: TensorInfo): Buffer {
  const buf = Buffer.allocUnsafe(t.byteLength);
  const fd = openSync(t.file, "r");
  try {
    let done = 0;
    while (done < t.byteLength) {
      const n = readSync(fd, buf, done, t.byteLength - done, t.offset + done);
      if (n <= 0) throw new UserError("invalid_safetensors", `${t.file}: truncated tensor ${t.name}`);
      done += n;
    }
  } finally {
    closeSync(fd);
  }
  return buf;
}

/** Converts raw tensor bytes to float32 (F32, F16, BF16). */
export function toFloat32(bytes: Buffer, dtype: SafetensorsDtype): Float32Array {
  if (dtype === "F32") {
    const out = new Float32Array(bytes.byteLength / 4);
    new Uint8Array(out.buffer).set(bytes);
    return out;
  }
  const n = bytes.byteLength / 2;
  const out = new Float32Array(n);
  if (dtype === "BF16") {
    const u32 = new Uint32Array(out.buffer);
    for (let i = 0; i < n; i++) u32[i] = bytes.readUInt16LE(i * 2) << 16;
    return out;
  }
  if (dtype === "F16") {
    for (let i = 0; i < n; i++) out[i] = halfToFloat(bytes.readUInt16LE(i * 2));
    return out;
  }
  throw new UserError("unsupported_dtype", `cannot convert ${dtype} to float32`);
}

export function readTensorF32(t: TensorInfo): Float32Array {
  return toFloat32(readTensorBytes(t), t.dtype);
}

function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}

export interface TensorToWrite {
  name: string;
  dtype: "F32";
  shape: number[];
  data: Float32Array;
}

/** Writes a safetensors file (float32 only; used by tests and tools that create model directories). */
export function writeSafetensors(file: string, tensors: readonly TensorToWrite[], metadata: Record<string, string> = {}): void {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const t of tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length) throw new UserError("invalid_tensor", `tensor ${t.name}: shape ${t.shape.join("x")} needs ${n} values, got ${t.data.length}`);
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + n * 4] };
    offset += n * 4;
  }
  let json = JSON.stringify(header);
  // Pad the header with spaces so tensor data starts 8-byte aligned (as the reference implementation does).
  json += " ".repeat((8 - ((8 + Buffer.byteLength(json)) % 8)) % 8);
  const headerBuf = Buffer.from(json, "utf8");
  const lenBuf = Buffer.alloc(8);
  lenBuf.writeBigUInt64LE(BigInt(headerBuf.byteLength));
  const fd = openSync(file, "w");
  try {
    writeSync(fd, lenBuf);
    writeSync(fd, headerBuf);
    for (const t of tensors) writeSync(fd, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  } finally {
    closeSync(fd);
  }
}
