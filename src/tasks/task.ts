import { z } from "zod";

/**
 * A verifiable task, harness-agnostic: the runner seeds a workspace with `files`, gives `prompt` to the harness, then
 * (only after the agent is done) copies `verifier.files` under {@link VERIFIER_DIR} in the workspace and runs
 * `verifier.command` with cwd = workspace. The verifier prints a {@link VerifierResult} JSON on its last stdout line.
 */

/** Workspace-relative folder the verifier files are installed into, hidden from the agent until verification. */
export const VERIFIER_DIR = ".harnessrl/verifier";
/**
 * Workspace-relative folder where built-in tool programs (`calc`, `search`) log their calls. In a rollout the tools
 * listed in `metadata.hostTools` run in a separate sandbox out of the agent's reach, and that sandbox's log is what the
 * verifier gets, under {@link VERIFIER_LOG_DIR}: the agent's own workspace log is never read, so it cannot forge it.
 */
export const TOOL_LOG_DIR = ".harnessrl/logs";
/** Where the verifier finds the tool logs (installed with it, from the host's record of the tool calls). */
export const VERIFIER_LOG_DIR = `${VERIFIER_DIR}/logs`;

export const SPLITS = ["train", "test"] as const;
export type Split = (typeof SPLITS)[number];

/** Relative POSIX path inside a workspace: no absolute paths, no `..`, no empty segments. */
export const relPathSchema = z
  .string()
  .min(1)
  .refine((p) => !p.startsWith("/") && !p.includes("\\") && p.split("/").every((s) => s !== "" && s !== "." && s !== ".."), {
    message: "must be a relative path without '..', '.', empty segments or backslashes",
  });

/** A file's content: a UTF-8 string, or an object giving encoding and whether it is executable. */
export const fileEntrySchema = z.union([
  z.string(),
  z.strictObject({
    content: z.string(),
    encoding: z.enum(["utf8", "base64"]).default("utf8"),
    executable: z.boolean().default(false),
  }),
]);
export type FileEntry = z.input<typeof fileEntrySchema>;
export type FileMap = Record<string, FileEntry>;

export const fileMapSchema = z.record(relPathSchema, fileEntrySchema);

/**
 * One step an oracle takes to solve the task through a harness's tools. `run`: a shell command line (run with cwd =
 * workspace); `expect`, if present, is a substring its stdout must contain. `write`: write a whole file.
 */
export const oracleStepSchema = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("run"), command: z.string().min(1), expect: z.string().optional() }),
  z.strictObject({ kind: z.literal("write"), path: relPathSchema, content: z.string() }),
]);
export type OracleStep = z.infer<typeof oracleStepSchema>;

export const oracleSchema = z.strictObject({
  steps: z.array(oracleStepSchema),
  /** The final answer, when the task asks for one (also what the last `write` step puts into answer.txt). */
  answer: z.string().optional(),
});
export type Oracle = z.infer<typeof oracleSchema>;

/** Known metadata fields are typed; anything else (e.g. ClawGym's own metadata) passes through unchanged. */
export const taskMetadataSchema = z.looseObject({
  template: z.string().optional(),
  difficulty: z.number().int().min(1).max(5).optional(),
  answer: z.string().optional(),
  entities: z.array(z.string()).optional(),
  oracle: oracleSchema.optional(),
  /** Name of the answer file for answer-style tasks (workspace-relative). */
  answerFile: relPathSchema.optional(),
  /**
   * Workspace programs whose calls feed rewards (`calc`, `search`): in a rollout each call runs on the host side, in
   * a separate sandbox seeded with the task's files, and the agent's workspace gets a stub that forwards to it.
   */
  hostTools: z.array(relPathSchema).optional(),
});
export type TaskMetadata = z.infer<typeof taskMetadataSchema>;

export const verifierSpecSchema = z.strictObject({
  /** Paths relative to {@link VERIFIER_DIR}. */
  files: fileMapSchema,
  /** argv, run with cwd = workspace; programs are looked up on PATH (`node`, `sh`, `python3`). */
  command: z.array(z.string().min(1)).min(1),
  timeoutMs: z.number().int().positive().optional(),
});
export type VerifierSpec = z.infer<typeof verifierSpecSchema>;

export const taskSchema = z.strictObject({
  id: z.string().min(1).regex(/^[A-Za-z0-9._-]+$/, "must use only letters, digits, '.', '_' and '-'"),
  family: z.string().min(1),
  split: z.enum(SPLITS),
  prompt: z.string().min(1),
  files: fileMapSchema,
  verifier: verifierSpecSchema,
  metadata: taskMetadataSchema,
});
export type Task = z.infer<typeof taskSchema>;

/** Normalised view of a file entry. */
export function fileBytes(entry: FileEntry): { data: Buffer; executable: boolean } {
  if (typeof entry === "string") return { data: Buffer.from(entry, "utf8"), executable: false };
  return { data: Buffer.from(entry.content, entry.encoding ?? "utf8"), executable: entry.executable ?? false };
}

/** Formats zod issues as `field.path: message` lines, so errors name the field. */
export function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length ? i.path.map(String).join(".") : "(root)"}: ${i.message}`)
    .join("; ");
}
