import { endianness } from "node:os";
import { InfraError } from "../core/errors.js";

/**
 * The worker protocol's framing (docs/worker.md; worker/harnessrl_worker/protocol.py is the other side).
 * Each message is one JSON line; arrays travel as "frames": their specs are listed in the line under `frames` and
 * their raw little-endian bytes follow the newline, concatenated in the listed order.
 */
export type WireArray = Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array;
export type WireDtype = "float32" | "float64" | "int32" | "int64" | "uint8";

export interface FrameSpec {
  name: string;
  dtype: WireDtype;
  shape: number[];
  nbytes: number;
}

export interface WireMessage {
  header: Record<string, unknown>;
  frames: Map<string, WireArray>;
}

if (endianness() !== "LE") throw new InfraError("big_endian", "the trainer worker protocol needs a little-endian host");

const BYTES: Record<WireDtype, number> = { float32: 4, float64: 8, int32: 4, int64: 8, uint8: 1 };

function dtypeOf(a: WireArray): WireDtype {
  if (a instanceof Float32Array) return "float32";
  if (a instanceof Float64Array) return "float64";
  if (a instanceof Int32Array) return "int32";
  if (a instanceof BigInt64Array) return "int64";
  return "uint8";
}

function viewAs(dtype: WireDtype, bytes: Buffer): WireArray {
  // Copy into a fresh, aligned ArrayBuffer: the received bytes can sit at any offset inside a pooled Buffer.
  const ab = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
  switch (dtype) {
    case "float32":
      return new Float32Array(ab);
    case "float64":
      return new Float64Array(ab);
    case "int32":
      return new Int32Array(ab);
    case "int64":
      return new BigInt64Array(ab);
    case "uint8":
      return new Uint8Array(ab);
  }
}

/** One message as the buffers to write, in order: the JSON line, then each frame's bytes (no copies of the arrays). */
export function encodeMessage(header: Record<string, unknown>, frames: ReadonlyMap<string, WireArray> = new Map()): Buffer[] {
  const specs: FrameSpec[] = [];
  const blobs: Buffer[] = [];
  for (const [name, a] of frames) {
    specs.push({ name, dtype: dtypeOf(a), shape: [a.length], nbytes: a.byteLength });
    blobs.push(Buffer.from(a.buffer, a.byteOffset, a.byteLength));
  }
  const body = specs.length > 0 ? { ...header, frames: specs } : header;
  return [Buffer.from(`${JSON.stringify(body)}\n`, "utf8"), ...blobs];
}

function parseSpecs(raw: unknown): FrameSpec[] {
  if (!Array.isArray(raw)) throw new InfraError("worker_protocol", "frames must be a list");
  return raw.map((s: unknown) => {
    const o = s as Partial<FrameSpec> | null;
    if (!o || typeof o.name !== "string" || !(typeof o.dtype === "string" && o.dtype in BYTES) || !Array.isArray(o.shape) || typeof o.nbytes !== "number") {
      throw new InfraError("worker_protocol", `malformed frame spec ${JSON.stringify(s)}`);
    }
    const numel = o.shape.reduce((a: number, b: number) => a * b, 1);
    if (numel * BYTES[o.dtype] !== o.nbytes) throw new InfraError("worker_protocol", `frame ${o.name}: nbytes does not match dtype and shape`);
    return { name: o.name, dtype: o.dtype, shape: o.shape, nbytes: o.nbytes };
  });
}

/** Incremental decoder for the worker's stdout: push chunks, get complete messages. */
export class MessageDecoder {
  private chunks: Buffer[] = [];
  private size = 0;
  /** Bytes already searched for a newline (so long lines are not rescanned). */
  private scanned = 0;
  private pending: { header: Record<string, unknown>; specs: FrameSpec[]; need: number } | null = null;

  push(chunk: Buffer): WireMessage[] {
    this.chunks.push(chunk);
    this.size += chunk.length;
    const out: WireMessage[] = [];
    for (;;) {
      if (this.pending === null) {
        const nl = this.findNewline();
        if (nl < 0) break;
        const line = this.take(nl + 1).toString("utf8");
        let header: unknown;
        try {
          header = JSON.parse(line);
        } catch {
          throw new InfraError("worker_protocol", `worker wrote a line that is not JSON: ${line.slice(0, 200)}`);
        }
        if (typeof header !== "object" || header === null || Array.isArray(header)) throw new InfraError("worker_protocol", "worker message is not a JSON object");
        const h = header as Record<string, unknown>;
        const specs = "frames" in h ? parseSpecs(h.frames) : [];
        delete h.frames;
        this.pending = { header: h, specs, need: specs.reduce((a, s) => a + s.nbytes, 0) };
      }
      const p = this.pending;
      if (this.size < p.need) break;
      const body = this.take(p.need);
      const frames = new Map<string, WireArray>();
      let offset = 0;
      for (const s of p.specs) {
        frames.set(s.name, viewAs(s.dtype, body.subarray(offset, offset + s.nbytes)));
        offset += s.nbytes;
      }
      out.push({ header: p.header, frames });
      this.pending = null;
    }
    return out;
  }

  private findNewline(): number {
    let base = 0;
    for (const c of this.chunks) {
      if (base + c.length > this.scanned) {
        const i = c.indexOf(10, Math.max(0, this.scanned - base));
        if (i >= 0) return base + i;
      }
      base += c.length;
    }
    this.scanned = this.size;
    return -1;
  }

  /** Removes and returns the first n buffered bytes. */
  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.size);
    const head = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.size = rest.length;
    this.scanned = 0;
    return head;
  }
}
