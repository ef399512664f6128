import { z } from "zod";
import type { TrainerCapability } from "./types.js";
import type { WireDtype } from "./wire.js";

/**
 * The worker operations this client may send, with their arguments and frames: `WorkerClient.request` is typed by this
 * map and checks each request against it before sending. It mirrors the one language-neutral table,
 * worker/harnessrl_worker/ops.json, which the Python dispatch and docs/worker.md are checked against too
 * (test/trainer/worker-ops.test.ts compares this map with the table field by field).
 */
export interface FrameIn {
  dtype: WireDtype;
  required?: boolean;
  /** The capability that sends this frame (absent: every backend). */
  capability?: TrainerCapability;
}

export interface WorkerOpSpec {
  /** "core", or the optional trainer capability this op serves. */
  capability: "core" | TrainerCapability;
  /** The `args` object: strict, so an argument the table does not list cannot be sent. */
  args: z.ZodObject;
  /** Args that belong to a capability although the op is core (e.g. forward_backward's `capo`). */
  capabilityArgs?: Readonly<Record<string, TrainerCapability>>;
  framesIn: Readonly<Record<string, FrameIn>>;
  framesOut: readonly string[];
  framesOutOptional?: readonly string[];
}

const int = z.number().int();
const num = z.number();
const str = z.string();
const bool = z.boolean();
const rowLengths = z.array(z.number().int());
const dtype = z.enum(["float32", "bfloat16", "float16"]);
const dtypeOrAuto = z.enum(["float32", "bfloat16", "float16", "auto"]);

const ROWS = { tokens: { dtype: "int32", required: true }, parent: { dtype: "int32", required: true }, positions: { dtype: "int32", required: true } } as const;
const ADAMW = { lr: num, weight_decay: num.optional(), beta1: num.optional(), beta2: num.optional(), eps: num.optional(), max_grad_norm: num.optional() };

const none = z.strictObject({});

export const WORKER_OPS = {
  hello: { capability: "core", args: none, framesIn: {}, framesOut: [] },
  shutdown: { capability: "core", args: none, framesIn: {}, framesOut: [] },
  init: {
    capability: "core",
    args: z.strictObject({ preset: str, seed: int, out: str, model_type: z.enum(["qwen2", "qwen3"]).optional(), chat_template: str.optional(), tokenizer_dir: str.optional() }),
    framesIn: {},
    framesOut: [],
  },
  load: { capability: "core", args: z.strictObject({ dir: str, dtype: dtypeOrAuto.optional(), attention: z.enum(["auto", "eager", "sdpa"]).optional() }), framesIn: {}, framesOut: [] },
  save: { capability: "core", args: z.strictObject({ dir: str.optional(), policy_version: int.optional(), dtype: dtype.optional() }), framesIn: {}, framesOut: [] },
  info: { capability: "core", args: none, framesIn: {}, framesOut: [] },
  logprobs: {
    capability: "core",
    args: z.strictObject({ row_lengths: rowLengths, temperature: num.optional(), entropy: bool.optional() }),
    framesIn: { ...ROWS, trainable: { dtype: "uint8" } },
    framesOut: ["logprobs"],
    framesOutOptional: ["entropy"],
  },
  forward_backward: {
    capability: "core",
    args: z.strictObject({
      row_lengths: rowLengths,
      objective: z.enum(["pg", "sft"]).optional(),
      temperature: num.optional(),
      loss: z
        .strictObject({
          clip_low: num.optional(),
          clip_high: num.optional(),
          is_mode: z.enum(["truncate", "mask", "none"]).optional(),
          tis_cap: num.optional(),
          mask_low: num.optional(),
          mask_high: num.optional(),
          entropy_coef: num.optional(),
          kl_coef: num.optional(),
        })
        .optional(),
      capo: bool.optional(),
    }),
    capabilityArgs: { capo: "capo" },
    framesIn: {
      ...ROWS,
      trainable: { dtype: "uint8", required: true },
      loss_weights: { dtype: "float32", required: true },
      old_logprobs: { dtype: "float32" },
      advantages: { dtype: "float32" },
      prox_logprobs: { dtype: "float32" },
      ref_logprobs: { dtype: "float32" },
      action_mask: { dtype: "uint8", capability: "capo" },
      args_mask: { dtype: "uint8", capability: "capo" },
    },
    framesOut: ["logprobs"],
  },
  optim_step: { capability: "core", args: z.strictObject({ ...ADAMW, reset: z.enum(["first_moment", "all"]).optional(), capo: bool.optional() }), capabilityArgs: { capo: "capo" }, framesIn: {}, framesOut: [] },
  zero_grad: { capability: "core", args: none, framesIn: {}, framesOut: [] },
  checkpoint_save: { capability: "core", args: z.strictObject({ dir: str, policy_version: int.optional(), extra: z.unknown() }), framesIn: {}, framesOut: [] },
  checkpoint_load: { capability: "core", args: z.strictObject({ dir: str, dtype: dtypeOrAuto.optional() }), framesIn: {}, framesOut: [] },
  grad_sketch: { capability: "grad_sketch", args: z.strictObject({ dim: int.optional(), seed: int.optional() }), framesIn: {}, framesOut: ["sketch"] },
  critic_init: { capability: "critic", args: z.strictObject({ from_policy: bool.optional(), seed: int.optional() }), framesIn: {}, framesOut: [] },
  critic_values: { capability: "critic", args: z.strictObject({ row_lengths: rowLengths }), framesIn: ROWS, framesOut: ["values"] },
  critic_forward_backward: {
    capability: "critic",
    args: z.strictObject({ row_lengths: rowLengths, value_clip: num.optional() }),
    framesIn: {
      ...ROWS,
      trainable: { dtype: "uint8", required: true },
      returns: { dtype: "float32", required: true },
      loss_weights: { dtype: "float32", required: true },
      old_values: { dtype: "float32" },
    },
    framesOut: ["values"],
  },
  critic_optim_step: { capability: "critic", args: z.strictObject(ADAMW), framesIn: {}, framesOut: [] },
  critic_save: { capability: "critic", args: z.strictObject({ dir: str }), framesIn: {}, framesOut: [] },
  critic_load: { capability: "critic", args: z.strictObject({ dir: str }), framesIn: {}, framesOut: [] },
  capo_probe: {
    capability: "capo",
    args: z.strictObject({ row_lengths: rowLengths, top_fraction: num.optional() }),
    framesIn: { ...ROWS, action_mask: { dtype: "uint8", required: true }, args_mask: { dtype: "uint8", required: true } },
    framesOut: [],
  },
  lora_init: {
    capability: "lora",
    args: z.strictObject({ rank: int, alpha: num.optional(), dropout: num.optional(), target_modules: str.optional(), seed: int.optional(), base_dir: str }),
    framesIn: {},
    framesOut: [],
  },
} as const satisfies Record<string, WorkerOpSpec>;

export type WorkerOp = keyof typeof WORKER_OPS;

/** The `args` a request for `op` takes (undefined optional fields are dropped on the wire). */
export type WorkerArgs<K extends WorkerOp> = z.input<(typeof WORKER_OPS)[K]["args"]>;

export function isWorkerOp(name: string): name is WorkerOp {
  return Object.hasOwn(WORKER_OPS, name);
}

/** The optional capabilities whose ops a worker lists in `hello.ops` (all of each capability's ops present). */
export function capabilitiesFromOps(ops: readonly string[]): TrainerCapability[] {
  const have = new Set(ops);
  const byCapability = new Map<TrainerCapability, boolean>();
  for (const [name, spec] of Object.entries(WORKER_OPS) as [WorkerOp, WorkerOpSpec][]) {
    if (spec.capability === "core") continue;
    byCapability.set(spec.capability, (byCapability.get(spec.capability) ?? true) && have.has(name));
  }
  return [...byCapability].filter(([, ok]) => ok).map(([c]) => c);
}
