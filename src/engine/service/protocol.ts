import { z } from "zod";

/**
 * The wire format of `harnessrl serve` (server.ts) and its client adapter `llamacpp-http` (client.ts): token ids in,
 * sampled ids + logprobs + the policy version and engine instance that sampled them out. One module so both sides
 * validate the same shapes; bump PROTOCOL_VERSION when a shape changes incompatibly.
 *
 *   GET  /v1/info                          open: model, context window, vocabulary, policy version, engine instance
 *   GET  /v1/codec                         generation token: the model directory's tokenizer and chat template files
 *   POST /v1/generate                      generation token: GenerateBody → GenerateAnswer (or SSE with stream: true)
 *   PUT  /v1/policy/uploads/<v>/<file>     admin token: one file of policy version v's model directory (raw bytes)
 *   POST /v1/policy                        admin token: PolicyBody; answers once the version is served
 */
export const PROTOCOL_VERSION = 1;

/** Files that make a model directory's codec (tokenizer + chat template); config.json gives the vocabulary size. */
export const CODEC_FILES = ["config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json", "special_tokens_map.json", "chat_template.jinja", "chat_template.json"] as const;

/** An uploaded file's name: one path segment, nothing that climbs or hides. */
export const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Largest prompt accepted (tokens); a llama.cpp sequence holds far fewer, this only bounds what is parsed. */
export const MAX_PROMPT_TOKENS = 1 << 20;

const tokenId = z.number().int().min(0).max(0x7fffffff);

export const samplingSchema = z
  .object({
    temperature: z.number().min(0).max(1e6),
    max_tokens: z.number().int().min(0).max(1 << 20),
    top_p: z.number().gt(0).max(1),
    top_k: z.number().int().min(0).max(0x7fffffff),
    min_p: z.number().min(0).max(1),
    seed: z.number().int().min(0).max(0xffffffff).optional(),
  })
  .strict();

export const generateBodySchema = z
  .object({
    prompt: z.array(tokenId).min(1).max(MAX_PROMPT_TOKENS),
    params: samplingSchema,
    /** Server-sent events: one `token` event per sampled token, then one `done` event. */
    stream: z.boolean().optional(),
  })
  .strict();
export type GenerateBody = z.infer<typeof generateBodySchema>;

const finishSchema = z.enum(["stop", "length", "abort"]);

/** Who sampled: the version of the weights and the engine instance; `current_version` is the server's version now. */
const stampSchema = z.object({ policy_version: z.number().int(), engine_instance: z.string().min(1), current_version: z.number().int() });

export const generateAnswerSchema = stampSchema.extend({
  tokens: z.array(tokenId),
  logprobs: z.array(z.number()),
  finish_reason: finishSchema,
});
export type GenerateAnswer = z.infer<typeof generateAnswerSchema>;

/** Stream events: `{token, logprob}` per token, then `{done: true, …stamp, finish_reason}`, then `[DONE]`. */
export const streamEventSchema = z.union([
  z.object({ token: tokenId, logprob: z.number() }),
  stampSchema.extend({ done: z.literal(true), finish_reason: finishSchema }),
  z.object({ error: z.object({ code: z.string(), message: z.string(), fault: z.string(), retryable: z.boolean() }) }),
]);

export const infoSchema = z.object({
  service: z.literal("harnessrl-serve"),
  protocol: z.number().int(),
  model: z.string(),
  context_window: z.number().int().min(1),
  vocab_size: z.number().int().min(1),
  policy_version: z.number().int(),
  /** The served weights' digest (weights/digest.ts): absent from servers before it was added. */
  policy_digest: z.string().optional(),
  engine_instance: z.string().min(1),
  in_flight: z.number().int().min(0),
  /** Whether POST /v1/generate needs the generation token (it always does when the server has one). */
  auth: z.boolean(),
});
export type ServiceInfo = z.infer<typeof infoSchema>;

export const codecSchema = z.object({ files: z.record(z.string().regex(FILE_NAME), z.string()) });

const version = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** Load a policy version: a model directory on the server's disk, or the files uploaded for that version. */
export const policyBodySchema = z.union([
  z.object({ version, model_dir: z.string().min(1).max(4096) }).strict(),
  z.object({ version, uploaded: z.literal(true) }).strict(),
]);
export type PolicyBody = z.infer<typeof policyBodySchema>;

export const policyAnswerSchema = z.object({ policy_version: z.number().int(), engine_instance: z.string(), load_ms: z.number() });

/** Every refusal: the harnessrl error's code, message and fault (the client rebuilds the error from them). */
export const errorAnswerSchema = z.object({ error: z.object({ code: z.string(), message: z.string(), fault: z.string(), retryable: z.boolean() }) });
