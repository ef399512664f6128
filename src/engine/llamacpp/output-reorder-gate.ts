import type { LlamaContext } from "node-llama-cpp";
import { EngineError } from "../../core/errors.js";

/**
 * Makes concurrent sampling from one multi-sequence llama.cpp context read the right logits.
 *
 * Why: when a decode batch holds several sequences, llama.cpp (non-unified KV cache, the node-llama-cpp default) splits
 * it into micro-batches of consecutive sequence ids, so outputs can come out in another order than the batch's. It then
 * records row swaps and applies them lazily, in place, on the first logits access (`llama_context::output_reorder()`,
 * called by `llama_get_logits` and every `*_ith` getter), without a lock. node-llama-cpp 3.21.1 queues one
 * `AddonContextSampleTokenWorker` per sequence right after `decodeBatch` resolves, and libuv runs them on parallel
 * threads, so several threads replay the same swaps on the shared logits buffer at once; rows end up swapped back or
 * torn and a sequence samples (and reports the probability of) a token from logits that are not its own.
 *
 * Fix: after each `decodeBatch`, the first `sampleToken` runs alone; the others start once it has finished, when the
 * swaps are applied and cleared, and then only read the buffer (they still run in parallel). node-llama-cpp awaits all
 * sampling of a batch before it decodes the next one, so one gate per decode suffices.
 */
interface NativeContext {
  decodeBatch(...args: unknown[]): Promise<unknown>;
  sampleToken(...args: unknown[]): Promise<unknown>;
}

function nativeContext(context: LlamaContext): NativeContext {
  // `_ctx` is node-llama-cpp's internal AddonContext (pinned at 3.21.1); fail loudly if its shape ever changes.
  const native: unknown = (context as unknown as { _ctx?: unknown })._ctx;
  const n = native as Partial<Record<keyof NativeContext, unknown>> | null | undefined;
  if (typeof n !== "object" || n === null || typeof n.decodeBatch !== "function" || typeof n.sampleToken !== "function") {
    throw new EngineError("llamacpp_unsupported", "node-llama-cpp's context has no _ctx.decodeBatch/_ctx.sampleToken: shared batching needs the pinned node-llama-cpp 3.21.1");
  }
  return native as NativeContext;
}

const gated = new WeakSet<object>();

/** Installs the gate on a context; idempotent per context. */
export function gateOutputReorder(context: LlamaContext): void {
  const native = nativeContext(context);
  if (gated.has(native)) return;
  gated.add(native);
  const decode = native.decodeBatch.bind(native);
  const sample = native.sampleToken.bind(native);
  let firstAfterDecode = false;
  let reordered: Promise<unknown> = Promise.resolve();
  // The addon's methods are read-only on its prototype; own properties on the instance shadow them.
  Object.defineProperty(native, "decodeBatch", {
    value: async (...args: unknown[]): Promise<unknown> => {
      const result = await decode(...args);
      firstAfterDecode = true;
      return result;
    },
  });
  Object.defineProperty(native, "sampleToken", {
    value: (...args: unknown[]): Promise<unknown> => {
      if (!firstAfterDecode) return reordered.then(() => sample(...args));
      firstAfterDecode = false;
      const first = sample(...args);
      reordered = first.catch(() => undefined);
      return first;
    },
  });
}

