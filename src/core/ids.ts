import { randomBytes, randomFillSync } from "node:crypto";

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/**
 * Random bytes for ids come from a pool refilled 4 KiB at a time: a proxy call takes three ids, and one
 * `randomBytes` per id (a syscall-backed fill plus a Buffer each) was a few percent of the proxy's CPU per call.
 */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function take(n: number): Buffer {
  if (n > pool.length) return randomBytes(n);
  if (poolOffset + n > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const out = pool.subarray(poolOffset, poolOffset + n);
  poolOffset += n;
  return out;
}

/** Random, URL-safe, prefixed ids (`call_…`, `ses_…`); 20 base-36 chars ≈ 103 bits. */
export function newId(prefix: string, length = 20): string {
  const bytes = take(length);
  let out = `${prefix}_`;
  for (let i = 0; i < length; i++) out += ALPHABET[(bytes[i] as number) % 36];
  return out;
}

/** A secret credential: 32 random bytes, base64url (not pooled: secrets never share a buffer with ids). */
export function newSecret(prefix = "hrl"): string {
  return `${prefix}-${randomBytes(32).toString("base64url")}`;
}
