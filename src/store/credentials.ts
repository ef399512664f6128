import { createHash } from "node:crypto";

/** Stores never keep a session's secret, only this hash; lookups hash the presented credential the same way. */
export function hashCredential(credential: string): string {
  return createHash("sha256").update(credential, "utf8").digest("hex");
}
