import { z } from "zod";

/**
 * Config errors as one line per problem, each with the dotted path of the offending key. Zod reports an unknown key at
 * its parent object ("Unrecognized key"); these lines name the key itself and the nearest known spelling.
 */

/** The schemas a schema stands for once optional/nullable/default/prefault/pipe wrappers are removed (unions: each option). */
function bases(schema: z.core.$ZodType): z.core.$ZodType[] {
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodNullable || schema instanceof z.ZodDefault || schema instanceof z.ZodPrefault) return bases(schema.unwrap() as z.core.$ZodType);
  if (schema instanceof z.ZodPipe) return bases(schema.in as z.core.$ZodType);
  if (schema instanceof z.ZodUnion) return (schema.options as readonly z.core.$ZodType[]).flatMap(bases);
  return [schema];
}

/** Union options whose literal fields (a discriminator such as `name`) match `value`; all of them if none does. */
function matching(options: z.core.$ZodType[], value: unknown): z.core.$ZodType[] {
  if (typeof value !== "object" || value === null) return options;
  const fits = options.filter(
    (s) => !(s instanceof z.ZodObject) || Object.entries(s.shape as Record<string, z.core.$ZodType>).every(([k, f]) => !(f instanceof z.ZodLiteral) || f.values.has((value as Record<string, never>)[k])),
  );
  return fits.length ? fits : options;
}

/**
 * The keys accepted by the object(s) at `path` inside `schema` (array indices step into elements); [] if none is an
 * object. `input`, the value being checked, picks the union option(s) it means (e.g. which scheduler).
 */
export function schemaKeysAt(schema: z.core.$ZodType, path: readonly PropertyKey[], input?: unknown): string[] {
  let value = input;
  let current = matching(bases(schema), value);
  for (const step of path) {
    value = typeof value === "object" && value !== null ? (value as Record<PropertyKey, unknown>)[step] : undefined;
    current = matching(
      current.flatMap((s) => {
        if (typeof step === "number") return s instanceof z.ZodArray ? bases(s.element as z.core.$ZodType) : [];
        const child = s instanceof z.ZodObject ? (s.shape as Record<string, z.core.$ZodType | undefined>)[String(step)] : undefined;
        return child ? bases(child) : [];
      }),
      value,
    );
  }
  return [...new Set(current.flatMap((s) => (s instanceof z.ZodObject ? Object.keys(s.shape) : [])))];
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row.push(Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)));
    prev = row;
  }
  return prev[b.length] ?? 0;
}

/** The known key a typo most likely meant, if one is close enough. */
function nearest(key: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Math.max(2, Math.floor(key.length / 3)) + 1;
  for (const k of known) {
    // camelCase spellings (the advantage section's old keys) compare in snake_case.
    const d = editDistance(key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), k);
    if (k !== key && d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best;
}

const dotted = (path: readonly PropertyKey[]): string => (path.length ? path.map(String).join(".") : "(root)");

/**
 * A union none of whose options matched (e.g. `model`: preset | dir | checkpoint): the option that came closest, i.e.
 * with the fewest issues, explains the failure best; its issues are re-rooted at the union's path.
 */
function closestOption(i: z.core.$ZodIssueInvalidUnion): z.core.$ZodIssue[] | null {
  const best = [...i.errors].filter((e) => e.length > 0).sort((a, b) => a.length - b.length)[0];
  return best ? best.map((j) => ({ ...j, path: [...i.path, ...j.path] })) : null;
}

/**
 * One line per issue: `path.to.key: message`; unknown keys get their own path and a "did you mean", or where the knob
 * lives now when `moved` (dotted old path → dotted new path) knows it.
 */
export function issueLines(issues: readonly z.core.$ZodIssue[], schema: z.core.$ZodType, input: unknown, moved: Readonly<Record<string, string>> = {}): string[] {
  return issues.flatMap((i) => {
    if (i.code === "invalid_union") {
      const closest = closestOption(i);
      if (closest) return issueLines(closest, schema, input, moved);
    }
    if (i.code !== "unrecognized_keys") return [`${dotted(i.path)}: ${i.message}`];
    const known = schemaKeysAt(schema, i.path, input);
    return i.keys.map((k) => {
      const at = dotted([...i.path, k]);
      const now = moved[at];
      const guess = nearest(k, known);
      const hint = now ? `now ${now}` : known.includes(k) ? "not with the other keys given here" : guess ? `did you mean ${guess}?` : known.length ? `known: ${known.join(", ")}` : "";
      return `${at}: unknown key${hint ? ` (${hint})` : ""}`;
    });
  });
}
