import { z } from "zod";

/**
 * Built-in harnesses are configured only through environment variables, like real harnesses: the runner sets
 * them in the sandbox. Validated once at start; a bad value is a clear message and exit code 2.
 */
const EnvSchema = z.object({
  HARNESSRL_BASE_URL: z.string().url(),
  HARNESSRL_API_KEY: z.string().min(1),
  HARNESSRL_MODEL: z.string().min(1),
  HARNESSRL_PROMPT: z.string().min(1),
  HARNESSRL_MAX_TURNS: z.coerce.number().int().positive().default(8),
  HARNESSRL_MAX_TOKENS: z.coerce.number().int().positive().default(256),
  HARNESSRL_TOOL_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
});

export type HarnessEnv = z.infer<typeof EnvSchema>;

export function readHarnessEnv(env: NodeJS.ProcessEnv = process.env): HarnessEnv {
  const r = EnvSchema.safeParse(env);
  if (!r.success) {
    const issues = r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    process.stderr.write(`harness: bad environment: ${issues}\n`);
    process.exit(2);
  }
  return r.data;
}

/** The OpenAI base URL ends in /v1; the Anthropic SDK wants the bare origin. */
export function openaiBaseUrl(env: HarnessEnv): string {
  return `${env.HARNESSRL_BASE_URL.replace(/\/+$/, "")}/v1`;
}
