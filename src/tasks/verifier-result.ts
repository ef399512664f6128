import { z } from "zod";

/**
 * The verifier contract: the last non-empty stdout line is JSON `{"score": s, "subscores": {...}}` with s in [0, 1].
 * Sub-scores are numbers or ordered lists of numbers (per-decision process signals, e.g. one entry per search call).
 */
export const subscoreSchema = z.union([z.number().finite(), z.array(z.number().finite())]);

export const verifierOutputSchema = z.looseObject({
  score: z.number().finite().min(0).max(1),
  subscores: z.record(z.string(), subscoreSchema).default({}),
  error: z.string().optional(),
});

export interface VerifierResult {
  score: number;
  subscores: Record<string, number | number[]>;
  /** Set when the output broke the contract (score is then 0) or the verifier reported a problem. */
  error?: string;
}

const MAX_ECHO = 200;

function clip(s: string): string {
  return s.length > MAX_ECHO ? `${s.slice(0, MAX_ECHO)}…` : s;
}

/** Parses a verifier's stdout. Never throws: anything off-contract gives score 0 and an error saying why. */
export function parseVerifierOutput(stdout: string): VerifierResult {
  const lines = stdout.split(/\r?\n/).map((l) => l.trim()).filter((l) => l.length > 0);
  const last = lines[lines.length - 1];
  if (last === undefined) return { score: 0, subscores: {}, error: "verifier printed nothing" };
  let value: unknown;
  try {
    value = JSON.parse(last);
  } catch {
    return { score: 0, subscores: {}, error: `verifier's last line is not JSON: ${clip(last)}` };
  }
  const parsed = verifierOutputSchema.safeParse(value);
  if (!parsed.success) {
    const why = parsed.error.issues.map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`).join("; ");
    return { score: 0, subscores: {}, error: `verifier output breaks the contract (${why}): ${clip(last)}` };
  }
  const result: VerifierResult = { score: parsed.data.score, subscores: parsed.data.subscores };
  if (parsed.data.error !== undefined) result.error = parsed.data.error;
  return result;
}
