import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/** Random, URL-safe, prefixed ids (`call_…`, `ses_…`); 20 base-36 chars ≈ 103 bits. */
export function newId(prefix: string, length = 20): string {
  const bytes = randomBytes(length);
  let out = "";
  for (const b of bytes) out += ALPHABET[b % 36];
  return `${prefix}_${out}`;
}

/** A secret credential: 32 random bytes, base64url. */
export function newSecret(prefix = "hrl"): string {
  return `${prefix}-${randomBytes(32).toString("base64url")}`;
}
