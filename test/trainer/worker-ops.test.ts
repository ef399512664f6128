import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { InfraError } from "../../src/core/errors.js";
import { workerPackageDir } from "../../src/trainer/paths.js";
import type { WireArray } from "../../src/trainer/wire.js";
import { WorkerClient } from "../../src/trainer/worker-client.js";
import { WORKER_OPS, capabilitiesFromOps, type WorkerOpSpec } from "../../src/trainer/worker-ops.js";

/**
 * The one op table (worker/harnessrl_worker/ops.json) against the TypeScript client's typed op map and against
 * docs/worker.md. The Python side checks its dispatch against the same table (worker/tests/test_ops_table.py).
 */
interface ArgSpec {
  type: string;
  required?: boolean;
  values?: string[];
  fields?: Record<string, ArgSpec>;
  capability?: string;
  default?: unknown;
}

interface OpEntry {
  capability: string;
  summary: string;
  args: Record<string, ArgSpec>;
  frames_in: Record<string, { dtype: string; required?: boolean; capability?: string }>;
  frames_out: string[];
  frames_out_optional: string[];
  result: string[];
  result_optional: string[];
}

const TABLE_PATH = join(workerPackageDir(), "harnessrl_worker", "ops.json");
const table = JSON.parse(readFileSync(TABLE_PATH, "utf8")) as { protocol: number; types: string[]; ops: Record<string, OpEntry> };
const DOC_PATH = join(import.meta.dirname, "..", "..", "docs", "worker.md");

/** The table's description of one zod field of the client's map (its `default` is documentation only). */
function describeZod(field: z.ZodType, capability?: string): ArgSpec {
  const required = !field.safeParse(undefined).success;
  const inner = field instanceof z.ZodOptional ? (field.unwrap() as z.ZodType) : field;
  const out: ArgSpec = { type: "?" };
  if (inner instanceof z.ZodString) out.type = "string";
  else if (inner instanceof z.ZodEnum) Object.assign(out, { type: "string", values: inner.options });
  else if (inner instanceof z.ZodNumber) out.type = inner.safeParse(0.5).success ? "number" : "int";
  else if (inner instanceof z.ZodBoolean) out.type = "bool";
  else if (inner instanceof z.ZodArray) out.type = `${describeZod(inner.element as z.ZodType).type}[]`;
  else if (inner instanceof z.ZodObject) Object.assign(out, { type: "object", fields: describeArgs(inner) });
  else if (inner instanceof z.ZodUnknown) out.type = "json";
  if (required) out.required = true;
  if (capability) out.capability = capability;
  return out;
}

function describeArgs(schema: z.ZodObject, capabilities: Readonly<Record<string, string>> = {}): Record<string, ArgSpec> {
  return Object.fromEntries(Object.entries(schema.shape).map(([k, f]) => [k, describeZod(f as z.ZodType, capabilities[k])]));
}

function withoutDefaults(args: Record<string, ArgSpec>): Record<string, ArgSpec> {
  return Object.fromEntries(
    Object.entries(args).map(([k, { default: _d, fields, ...rest }]) => [k, fields ? { ...rest, fields: withoutDefaults(fields) } : rest]),
  );
}

const code = (s: string): string => `\`${s}\``;

function argCell(args: Record<string, ArgSpec>): string {
  const parts = Object.entries(args).map(([name, a]) => {
    const notes = [a.values ? a.values.join(" \\| ") : null, a.type === "json" ? "any JSON" : null, a.default !== undefined ? `default ${JSON.stringify(a.default)}` : null].filter((n) => n !== null);
    const fields = a.fields ? ` {${Object.keys(a.fields).join(", ")}}` : "";
    return `${code(a.required ? name : `${name}?`)}${fields}${notes.length ? ` (${notes.join("; ")})` : ""}${a.capability ? ` [${a.capability}]` : ""}`;
  });
  return parts.length ? parts.join(", ") : "–";
}

function framesCell(op: OpEntry): string {
  const inn = Object.entries(op.frames_in).map(([n, f]) => `${code(f.required ? n : `${n}?`)} ${f.dtype}${f.capability ? ` [${f.capability}]` : ""}`);
  const out = [...op.frames_out.map(code), ...op.frames_out_optional.map((n) => code(`${n}?`))];
  if (!inn.length && !out.length) return "–";
  return `${inn.join(", ") || "–"} → ${out.join(", ") || "–"}`;
}

/** The op table as docs/worker.md shows it. */
function renderTable(): string {
  const lines = ["| op | capability | what | args | frames in → out | result |", "| --- | --- | --- | --- | --- | --- |"];
  for (const [name, op] of Object.entries(table.ops)) {
    const result = [...op.result.map(code), ...op.result_optional.map((n) => code(`${n}?`))].join(", ") || "–";
    lines.push(`| ${code(name)} | ${op.capability} | ${op.summary} | ${argCell(op.args)} | ${framesCell(op)} | ${result} |`);
  }
  return lines.join("\n");
}

const START = "<!-- ops-table:start (generated from worker/harnessrl_worker/ops.json by test/trainer/worker-ops.test.ts; UPDATE_DOCS=1 rewrites it) -->";
const END = "<!-- ops-table:end -->";

describe("worker op table", () => {
  it("uses only the types it declares", () => {
    const walk = (args: Record<string, ArgSpec>): void => {
      for (const a of Object.values(args)) {
        expect(table.types).toContain(a.type);
        if (a.fields) walk(a.fields);
      }
    };
    for (const op of Object.values(table.ops)) walk(op.args);
  });

  it("lists exactly the ops of the client's typed map, with the same capability, args and frames", () => {
    expect(Object.keys(WORKER_OPS).sort()).toEqual(Object.keys(table.ops).sort());
    for (const [name, spec] of Object.entries(WORKER_OPS) as [string, WorkerOpSpec][]) {
      const entry = table.ops[name] as OpEntry;
      expect({ op: name, capability: spec.capability }).toEqual({ op: name, capability: entry.capability });
      expect({ op: name, args: describeArgs(spec.args, spec.capabilityArgs) }).toEqual({ op: name, args: withoutDefaults(entry.args) });
      expect({ op: name, frames: spec.framesIn }).toEqual({ op: name, frames: entry.frames_in });
      expect({ op: name, out: [...spec.framesOut], optional: [...(spec.framesOutOptional ?? [])] }).toEqual({ op: name, out: entry.frames_out, optional: entry.frames_out_optional });
    }
  });

  it("derives capabilities from a worker's op list: all of a capability's ops, or not that capability", () => {
    const all = Object.keys(table.ops);
    expect(capabilitiesFromOps(all).sort()).toEqual(["capo", "critic", "grad_sketch", "lora"]);
    const coreOps = all.filter((o) => table.ops[o]?.capability === "core");
    expect(capabilitiesFromOps(coreOps)).toEqual([]);
    expect(capabilitiesFromOps(all.filter((o) => o !== "critic_load")).sort()).toEqual(["capo", "grad_sketch", "lora"]);
  });

  it("is the op table docs/worker.md shows (every op documented, none stale)", () => {
    const doc = readFileSync(DOC_PATH, "utf8");
    const i = doc.indexOf(START);
    const j = doc.indexOf(END);
    const expected = renderTable();
    if (process.env.UPDATE_DOCS === "1" && i >= 0 && j > i) writeFileSync(DOC_PATH, `${doc.slice(0, i + START.length)}\n${expected}\n${doc.slice(j)}`);
    expect(i, "docs/worker.md lacks the ops-table markers").toBeGreaterThanOrEqual(0);
    const shown = readFileSync(DOC_PATH, "utf8");
    expect(shown.slice(shown.indexOf(START) + START.length, shown.indexOf(END)).trim()).toBe(expected);
  });
});

describe("worker client requests", () => {
  // Refused before sending: a misspelt argument would otherwise reach a worker that may not notice it.
  it("refuse an argument the table does not list, a missing frame and a frame of the wrong dtype", async () => {
    const { client } = await WorkerClient.start({ threads: 1 });
    try {
      // @ts-expect-error `verbose` is not an argument of hello
      const unknownArg = await client.request("hello", { verbose: true }).catch((e: unknown) => e);
      expect(unknownArg).toBeInstanceOf(InfraError);
      expect(unknownArg).toMatchObject({ code: "worker_protocol", message: expect.stringMatching(/hello: arguments do not match the op table/) });
      const tokens = new Int32Array([257, 1]);
      const missing = await client.request("logprobs", { row_lengths: [2] }, new Map([["tokens", tokens]])).catch((e: unknown) => e);
      expect(missing).toMatchObject({ code: "worker_protocol", message: 'logprobs: frame "parent" is required' });
      const wrongDtype = await client
        .request("logprobs", { row_lengths: [2] }, new Map<string, WireArray>([["tokens", new Float32Array(2)], ["parent", new Int32Array([-1, 0])], ["positions", new Int32Array([0, 1])]]))
        .catch((e: unknown) => e);
      expect(wrongDtype).toMatchObject({ code: "worker_protocol", message: 'logprobs: frame "tokens" must be int32' });
      // The worker is still there: refused requests never reached it.
      expect((await client.request("hello", {})).result.protocol).toBe(table.protocol);
    } finally {
      await client.close();
    }
  });
});
