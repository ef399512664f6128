/** A value as it shows in a change line: JSON, shortened. */
function shown(value: unknown): string {
  const text = value === undefined ? "(unset)" : JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Where two validated configs differ, as `dotted.path: old → new` lines (objects are compared key by key, arrays and
 * scalars as a whole), in key order. What a resumed run reports when its config is not the one the run started with.
 */
export function configChanges(before: unknown, after: unknown, prefix = ""): string[] {
  if (isRecord(before) && isRecord(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys.flatMap((k) => configChanges(before[k], after[k], prefix ? `${prefix}.${k}` : k));
  }
  if (JSON.stringify(before) === JSON.stringify(after)) return [];
  return [`${prefix || "(config)"}: ${shown(before)} → ${shown(after)}`];
}
