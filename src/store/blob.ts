import { endianness } from "node:os";
import { InfraError } from "../core/errors.js";

/**
 * Token ids and logprobs are stored as little-endian Int32 / Float32 arrays: 4 bytes per token instead of ~6 in
 * JSON, and encoding is a memcpy on little-endian hosts (all the ones we run on). Big-endian hosts take a slow path.
 */
const LITTLE_ENDIAN_HOST = endianness() === "LE";

/** `values[from..]` as little-endian Int32 (`from` > 0: a prompt stored as a delta, see prompt-delta.ts). */
export function encodeInt32(values: readonly number[], from = 0): Buffer {
  const arr = new Int32Array(values.length - from);
  for (let i = from; i < values.length; i++) {
    const v = values[i] as number;
    // `v | 0` is v exactly when v is an integer in Int32 range (one comparison instead of three checks per token).
    if ((v | 0) !== v) {
      throw new InfraError("invalid_stored_token", `token id at position ${i} is not a 32-bit integer: ${String(v)}`);
    }
    arr[i - from] = v;
  }
  return toLittleEndian(arr);
}

export function encodeFloat32(values: readonly number[]): Buffer {
  return toLittleEndian(Float32Array.from(values));
}

export function decodeInt32(buf: Uint8Array | null): number[] {
  if (buf === null || buf.byteLength === 0) return [];
  return Array.from(fromLittleEndian(buf, Int32Array));
}

export function decodeFloat32(buf: Uint8Array | null): number[] {
  if (buf === null || buf.byteLength === 0) return [];
  return Array.from(fromLittleEndian(buf, Float32Array));
}

function toLittleEndian(arr: Int32Array | Float32Array): Buffer {
  if (LITTLE_ENDIAN_HOST) return Buffer.from(arr.buffer, arr.byteOffset, arr.byteLength);
  const out = Buffer.allocUnsafe(arr.byteLength);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  for (let i = 0; i < arr.length; i++) {
    if (arr instanceof Int32Array) view.setInt32(i * 4, arr[i] as number, true);
    else view.setFloat32(i * 4, arr[i] as number, true);
  }
  return out;
}

function fromLittleEndian<T extends Int32ArrayConstructor | Float32ArrayConstructor>(buf: Uint8Array, Ctor: T): InstanceType<T> {
  if (buf.byteLength % 4 !== 0) throw new InfraError("store_corrupt", `stored array has ${buf.byteLength} bytes, not a multiple of 4`);
  const n = buf.byteLength / 4;
  const out = new Ctor(n) as InstanceType<T>;
  if (LITTLE_ENDIAN_HOST) {
    // Copy: the driver's buffer may be unaligned for a typed-array view.
    new Uint8Array(out.buffer).set(buf);
    return out;
  }
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  for (let i = 0; i < n; i++) out[i] = Ctor === Int32Array ? view.getInt32(i * 4, true) : view.getFloat32(i * 4, true);
  return out;
}
