import { z } from "zod";
import { UserError } from "../core/errors.js";
import type { ExecOptions, SandboxCreateOptions } from "./types.js";

/**
 * Bounds of a sandbox memory limit given in MiB (run configs' `rollout.memory_mb`, `--memory-mb`, a rollout job's
 * `settings.memoryMb`): below 16 MiB nothing a harness runs starts; 1 TiB is beyond any machine we run on.
 */
export const MEMORY_MB_MIN = 16;
export const MEMORY_MB_MAX = 1_048_576;

/** Create/exec options may come from task files and configs: validate them with clear messages. */
const bytes = z.union([z.string(), z.instanceof(Uint8Array)]);

const CreateSchema = z.object({
  workspaceFiles: z.union([z.string().min(1), z.record(z.string().min(1), bytes)]).optional(),
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "environment variable names are [A-Za-z_][A-Za-z0-9_]*"), z.string()).optional(),
  limits: z.object({
    memoryBytes: z.number().int().min(8 * 1024 * 1024, "memoryBytes must be at least 8 MiB"),
    maxPids: z.number().int().min(4, "maxPids must be at least 4"),
    wallClockMs: z.number().int().positive(),
    cpuShares: z.number().int().min(2).max(262144).optional(),
    diskBytes: z.number().int().min(1024 * 1024, "diskBytes must be at least 1 MiB").optional(),
  }),
  network: z
    .object({ proxy: z.object({ host: z.string().min(1), port: z.number().int().min(1).max(65535) }).optional() })
    .optional(),
  readOnlyPaths: z.array(z.string().startsWith("/", "readOnlyPaths must be absolute")).optional(),
  labels: z.record(z.string(), z.string()).optional(),
});

const ExecSchema = z.object({
  argv: z.array(z.string()).min(1, "argv must name a program"),
  cwd: z.string().optional(),
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string()).optional(),
  stdin: bytes.optional(),
  timeoutMs: z.number().int().positive().optional(),
  stdoutLimit: z.number().int().min(0).optional(),
  stderrLimit: z.number().int().min(0).optional(),
  proxy: z.boolean().optional(),
});

function fail(what: string, error: z.ZodError): never {
  const issues = error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
  throw new UserError("invalid_sandbox_options", `invalid sandbox ${what}: ${issues}`);
}

export function validateCreateOptions(options: SandboxCreateOptions): SandboxCreateOptions {
  const r = CreateSchema.safeParse(options);
  if (!r.success) fail("create options", r.error);
  return options;
}

export const DEFAULT_OUTPUT_LIMIT = 1024 * 1024;

export interface ResolvedExec {
  argv: string[];
  cwd: string | undefined;
  env: Record<string, string>;
  stdin: string | Uint8Array | undefined;
  timeoutMs: number | undefined;
  stdoutLimit: number;
  stderrLimit: number;
  proxy: boolean;
}

export function validateExec(argv: string[], options: ExecOptions): ResolvedExec {
  const r = ExecSchema.safeParse({ argv, ...options });
  if (!r.success) fail("exec options", r.error);
  return {
    argv,
    cwd: options.cwd,
    env: options.env ?? {},
    stdin: options.stdin,
    timeoutMs: options.timeoutMs,
    stdoutLimit: options.stdoutLimit ?? DEFAULT_OUTPUT_LIMIT,
    stderrLimit: options.stderrLimit ?? DEFAULT_OUTPUT_LIMIT,
    proxy: options.proxy ?? true,
  };
}
