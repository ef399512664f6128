import { EngineError } from "../../core/errors.js";

/**
 * JSON POST with a per-attempt timeout and retries with exponential backoff on failures that can succeed later:
 * connection errors, timeouts, 429 (honouring Retry-After) and 5xx. Other 4xx answers are final. A caller abort
 * ends everything at once and is reported as `undefined` (not an error), so engines can answer "abort".
 */
export interface RetryPolicy {
  timeoutMs: number;
  retries: number;
  /** First backoff delay; doubles per attempt, with jitter. */
  backoffMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { timeoutMs: 300_000, retries: 3, backoffMs: 250 };

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

function connectionCode(e: unknown): string | undefined {
  const cause = (e as { cause?: { code?: unknown } }).cause;
  return typeof cause?.code === "string" ? cause.code : undefined;
}

export async function postJson(url: string, body: unknown, policy: RetryPolicy, signal?: AbortSignal): Promise<unknown> {
  let last: EngineError | undefined;
  for (let attempt = 0; attempt <= policy.retries; attempt++) {
    if (signal?.aborted) return undefined;
    const timeout = AbortSignal.timeout(policy.timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let retryAfterMs: number | undefined;
    try {
      const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal: combined });
      const text = await res.text();
      if (res.ok) {
        try {
          return JSON.parse(text) as unknown;
        } catch (e) {
          throw new EngineError("engine_bad_response", `${url} answered ${res.status} with non-JSON: ${text.slice(0, 200)}`, { cause: e });
        }
      }
      const detail = `${url} answered ${res.status}: ${text.slice(0, 300)}`;
      if (res.status === 429) {
        const ra = Number(res.headers.get("retry-after"));
        retryAfterMs = Number.isFinite(ra) && ra > 0 ? ra * 1000 : undefined;
        last = new EngineError("engine_overloaded", detail, { retryable: true, details: { status: res.status } });
      } else if (res.status >= 500) {
        last = new EngineError("engine_server_error", detail, { retryable: true, details: { status: res.status } });
      } else {
        throw new EngineError("engine_rejected", detail, { retryable: false, details: { status: res.status } });
      }
    } catch (e) {
      if (e instanceof EngineError) {
        if (!e.retryable) throw e;
        last = e;
      } else if (signal?.aborted) {
        return undefined;
      } else if (timeout.aborted) {
        last = new EngineError("engine_timeout", `${url} did not answer within ${policy.timeoutMs} ms`, { retryable: true, cause: e });
      } else {
        const code = connectionCode(e);
        last = new EngineError("engine_unreachable", `cannot reach ${url}: ${code ?? (e instanceof Error ? e.message : String(e))}`, { retryable: true, cause: e });
      }
    }
    if (attempt < policy.retries) {
      const backoff = retryAfterMs ?? policy.backoffMs * 2 ** attempt * (0.5 + Math.random());
      await sleep(backoff, signal);
    }
  }
  throw new EngineError(last?.code ?? "engine_unreachable", `${last?.message ?? url} (gave up after ${policy.retries + 1} attempts)`, { retryable: true, cause: last, details: last?.details });
}
