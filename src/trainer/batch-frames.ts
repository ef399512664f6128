import type { PackedBatch, PackedRow } from "../batch/types.js";
import { InfraError, UserError } from "../core/errors.js";
import type { WireArray } from "./wire.js";

type RowField = keyof PackedRow;
type RowArray = Int32Array | Float32Array | Uint8Array;

/**
 * Concatenates the chosen per-row arrays of a batch into one frame per field (the worker splits them again by
 * `row_lengths`). Every row must carry every chosen field at the row's length.
 */
export function packBatch(batch: PackedBatch, fields: readonly RowField[]): { rowLengths: number[]; frames: Map<string, WireArray> } {
  const rowLengths = batch.rows.map((r) => r.tokens.length);
  const total = rowLengths.reduce((a, b) => a + b, 0);
  const frames = new Map<string, WireArray>();
  for (const field of fields) {
    const first = batch.rows.find((r) => r[field] !== undefined)?.[field];
    const Ctor = (first?.constructor ?? Int32Array) as new (n: number) => RowArray;
    const out = new Ctor(total);
    let offset = 0;
    batch.rows.forEach((row, i) => {
      const a = row[field];
      if (a === undefined) throw new UserError("invalid_batch", `row ${i} has no ${field}`);
      if (a.length !== row.tokens.length) throw new UserError("invalid_batch", `row ${i}: ${field} has ${a.length} entries, tokens ${row.tokens.length}`);
      if (a.constructor !== Ctor) throw new UserError("invalid_batch", `row ${i}: ${field} is a ${a.constructor.name}, expected ${Ctor.name}`);
      (out as { set(src: ArrayLike<number>, at: number): void }).set(a, offset);
      offset += a.length;
    });
    frames.set(snake(field), out);
  }
  return { rowLengths, frames };
}

/** Splits a concatenated per-token result back into per-row views. */
export function splitRows(values: Float32Array, rowLengths: readonly number[]): Float32Array[] {
  const total = rowLengths.reduce((a, b) => a + b, 0);
  if (values.length !== total) throw new InfraError("worker_protocol", `worker returned ${values.length} values for ${total} tokens`);
  const out: Float32Array[] = [];
  let offset = 0;
  for (const n of rowLengths) {
    out.push(values.subarray(offset, offset + n));
    offset += n;
  }
  return out;
}

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
