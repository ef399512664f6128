import type { z } from "zod";
import { HarnessError, type ErrorCode } from "../../core/errors.js";

/** `["messages", 2, "content"]` → `messages[2].content`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else out += out === "" ? String(p) : `.${String(p)}`;
  }
  return out === "" ? "body" : out;
}

/** Validates untrusted input with a zod schema; failures become one 400 (a HarnessError) naming the offending fields. */
export function validate<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  const issues = r.error.issues.slice(0, 3).map((i) => `${formatPath(i.path)}: ${i.message}`);
  const more = r.error.issues.length > 3 ? ` (and ${r.error.issues.length - 3} more)` : "";
  const first = r.error.issues[0];
  throw new HarnessError("invalid_request", `invalid request: ${issues.join("; ")}${more}`, {
    details: first ? { param: formatPath(first.path) } : undefined,
  });
}

/** A 400 for a field the request got wrong, with the field as OpenAI's `param`: the harness spoke the protocol wrongly. */
export function badField(param: string, message: string, code: ErrorCode<"harness"> = "invalid_request"): HarnessError {
  return new HarnessError(code, `${param}: ${message}`, { details: { param } });
}

/** The subset of a request body's fields that were set (e.g. the sampling parameters a harness asked for). */
export function pickFields(body: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) if (body[f] !== undefined) out[f] = body[f];
  return out;
}
