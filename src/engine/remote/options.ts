import { z } from "zod";
import type { Codec } from "../../chat/codec.js";
import { UserError } from "../../core/errors.js";
import { stringOptions, type EngineSpec } from "../spec.js";
import { DEFAULT_RETRY, type RetryPolicy } from "./http.js";

/**
 * Options of `vllm:<url>` / `sglang:<url>`:
 * `?model_dir=/path` (tokenizer + chat template; else the factory's model dir, else the tiny byte tokenizer),
 * `&model=<served name>`, `&timeout_ms=`, `&retries=`, `&ctx=<context window>`, `&version=<initial policy version>`,
 * `&reload_url=<deployment hook>` (vLLM only: POSTed `{model_path, version}` by loadPolicy), `&lora=1` (policy versions
 * are LoRA adapters loaded through the server's runtime adapter endpoints: adapters.ts). Structured: the URL is the
 * target, `modelDir` the policy's model directory (or the `model_dir` option).
 */
export interface RemoteOptions {
  baseUrl: string;
  modelDir: string | undefined;
  model: string | undefined;
  retry: RetryPolicy;
  contextWindow: number | undefined;
  initialVersion: number;
  reloadUrl: string | undefined;
  /** Serve each policy version's `adapter/` (LoRA) through the server's adapter endpoints instead of reloading weights. */
  lora: boolean;
  /** The policy's codec, used when there is no `modelDir` (whose own codec wins); else the tiny byte codec. */
  codec?: Codec;
}

const querySchema = z
  .object({
    model_dir: z.string().min(1).optional(),
    model: z.string().min(1).optional(),
    timeout_ms: z.coerce.number().int().min(1).optional(),
    retries: z.coerce.number().int().min(0).max(20).optional(),
    backoff_ms: z.coerce.number().int().min(0).optional(),
    ctx: z.coerce.number().int().min(1).optional(),
    version: z.coerce.number().int().optional(),
    reload_url: z.url().optional(),
    lora: z.enum(["0", "1", "true", "false"]).optional(),
  })
  .strict();

export function remoteOptions(spec: EngineSpec): RemoteOptions {
  const scheme = spec.kind;
  const base = spec.target.replace(/\/+$/, "");
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new UserError("invalid_engine_spec", `${scheme} needs a server URL: ${scheme}:http://host:port[?model_dir=…&model=…]`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UserError("invalid_engine_spec", `${scheme}: URL must be http(s), got ${base}`);
  const r = querySchema.safeParse(stringOptions(spec));
  if (!r.success) throw new UserError("invalid_engine_spec", `${scheme} spec "${base}": ${z.prettifyError(r.error)}`);
  const o = r.data;
  return {
    baseUrl: base,
    modelDir: o.model_dir ?? spec.modelDir,
    model: o.model,
    retry: { timeoutMs: o.timeout_ms ?? DEFAULT_RETRY.timeoutMs, retries: o.retries ?? DEFAULT_RETRY.retries, backoffMs: o.backoff_ms ?? DEFAULT_RETRY.backoffMs },
    contextWindow: o.ctx,
    initialVersion: o.version ?? 0,
    reloadUrl: o.reload_url,
    lora: o.lora === "1" || o.lora === "true",
  };
}
