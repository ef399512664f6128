import { createHash } from "node:crypto";
import { closeSync, openSync, readSync } from "node:fs";
import { basename } from "node:path";
import { modelWeightFiles } from "./safetensors.js";

/**
 * What a policy *is*, independent of where it lies and what version number it was given: a SHA-256 over its weight
 * files' names and bytes (the first 24 hex digits). A served engine reports the digest of what it serves, so a trainer
 * can tell "serves my v0" from "serves some other model that also calls itself v0" (a service started on another
 * model directory). Reads every weight byte: ~1 GB/s here, once per connect, not per step.
 */
export function policyDigest(modelDir: string): string {
  const h = createHash("sha256");
  const buf = Buffer.allocUnsafe(4 * 1024 * 1024);
  for (const file of modelWeightFiles(modelDir)) {
    h.update(`\0${basename(file)}\0`);
    const fd = openSync(file, "r");
    try {
      for (let n = readSync(fd, buf, 0, buf.length, null); n > 0; n = readSync(fd, buf, 0, buf.length, null)) h.update(buf.subarray(0, n));
    } finally {
      closeSync(fd);
    }
  }
  return h.digest("hex").slice(0, 24);
}
