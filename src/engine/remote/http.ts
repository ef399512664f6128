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

/**
 * Runs one POST with retries; `onOk` consumes a successful response. Failures inside `onOk` are not retried (a
 * stream may already have delivered tokens) and a caller abort during it yields `undefined`.
 */
async function withRetries<T>(url: string, body: unknown, policy: RetryPolicy, signal: AbortSignal | undefined, onOk: (res: Response) => Promise<T>, headers: Readonly<Record<string, string>> = {}): Promise<T | undefined> {
  let last: EngineError | undefined;
  for (let attempt = 0; attempt <= policy.retries; attempt++) {
    if (signal?.aborted) return undefined;
    const timeout = AbortSignal.timeout(policy.timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let retryAfterMs: number | undefined;
    let res: Response | undefined;
    try {
      res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body), signal: combined });
      if (!res.ok) {
        // The body is kept (bounded) in details so an adapter can read its server's structured error.
        const text = (await res.text()).slice(0, 4000);
        const detail = `${url} answered ${res.status}: ${text.slice(0, 300)}`;
        if (res.status === 429) {
          const ra = Number(res.headers.get("retry-after"));
          retryAfterMs = Number.isFinite(ra) && ra > 0 ? ra * 1000 : undefined;
          last = new EngineError("engine_overloaded", detail, { retryable: true, details: { status: res.status, body: text } });
        } else if (res.status >= 500) {
          last = new EngineError("engine_server_error", detail, { retryable: true, details: { status: res.status, body: text } });
        } else {
          throw new EngineError("engine_rejected", detail, { retryable: false, details: { status: res.status, body: text } });
        }
      }
    } catch (e) {
      if (e instanceof EngineError) throw e;
      if (signal?.aborted) return undefined;
      if (timeout.aborted) last = new EngineError("engine_timeout", `${url} did not answer within ${policy.timeoutMs} ms`, { retryable: true, cause: e });
      else last = new EngineError("engine_unreachable", `cannot reach ${url}: ${connectionCode(e) ?? (e instanceof Error ? e.message : String(e))}`, { retryable: true, cause: e });
      res = undefined;
    }
    if (res?.ok) {
      try {
        return await onOk(res);
      } catch (e) {
        if (signal?.aborted) return undefined;
        if (e instanceof EngineError) throw e;
        const code = timeout.aborted ? "engine_timeout" : "engine_stream_broken";
        throw new EngineError(code, `${url}: reading the answer failed: ${e instanceof Error ? e.message : String(e)}`, { retryable: false, cause: e });
      }
    }
    if (attempt < policy.retries) {
      const backoff = retryAfterMs ?? policy.backoffMs * 2 ** attempt * (0.5 + Math.random());
      await sleep(backoff, signal);
    }
  }
  throw new EngineError(last?.code ?? "engine_unreachable", `${last?.message ?? url} (gave up after ${policy.retries + 1} attempts)`, { retryable: true, cause: last, details: last?.details });
}

export function postJson(url: string, body: unknown, policy: RetryPolicy, signal?: AbortSignal, headers?: Readonly<Record<string, string>>): Promise<unknown> {
  return withRetries(url, body, policy, signal, async (res) => {
    const text = await res.text();
    try {
      return JSON.parse(text) as unknown;
    } catch (e) {
      throw new EngineError("invalid_engine_response", `${url} answered ${res.status} with non-JSON: ${text.slice(0, 200)}`, { cause: e });
    }
  }, headers);
}

/** POST whose successful answer is plain text (vLLM's adapter endpoints); HTTP errors are raised as for postJson. */
export function postText(url: string, body: unknown, policy: RetryPolicy, signal?: AbortSignal): Promise<string | undefined> {
  return withRetries(url, body, policy, signal, (res) => res.text());
}

/**
 * POST answered with server-sent events (`data: {json}` … `data: [DONE]`); `onEvent` gets each parsed event as it
 * arrives. Resolves `true` at the end of the stream, `undefined` when the caller aborted.
 */
export function postSse(url: string, body: unknown, policy: RetryPolicy, signal: AbortSignal | undefined, onEvent: (data: unknown) => void, headers?: Readonly<Record<string, string>>): Promise<true | undefined> {
  return withRetries(url, body, policy, signal, async (res) => {
    if (!res.body) throw new EngineError("invalid_engine_response", `${url}: streaming answer has no body`);
    const decoder = new TextDecoder();
    let buffer = "";
    const handle = (event: string): boolean => {
      for (const line of event.split("\n")) {
        if (!line.startsWith("data:")) continue;
        const data = line.slice(5).trim();
        if (data === "[DONE]") return true;
        let parsed: unknown;
        try {
          parsed = JSON.parse(data);
        } catch (e) {
          throw new EngineError("invalid_engine_response", `${url}: bad event data: ${data.slice(0, 200)}`, { cause: e });
        }
        onEvent(parsed);
      }
      return false;
    };
    for await (const chunk of res.body) {
      buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n/g, "\n");
      let i: number;
      while ((i = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        if (handle(event)) return true as const;
      }
    }
    if (buffer.trim() && handle(buffer)) return true as const;
    throw new EngineError("engine_stream_broken", `${url}: stream ended without [DONE]`, { retryable: false });
  }, headers);
}
