import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ERROR_CODES, codeInfo, type Fault } from "../../src/core/error-codes.js";
import { WORKER_ERROR_CODES } from "../../src/trainer/worker-client.js";

/**
 * The error catalogue (src/core/error-codes.ts) against the code that throws and the doc that lists it. Regenerate
 * docs/errors.md's table with `HARNESSRL_WRITE_DOCS=1 npx vitest run test/core/error-catalogue.test.ts`.
 */
const ROOT = join(import.meta.dirname, "..", "..");
const DOC = join(ROOT, "docs", "errors.md");
const BEGIN = "<!-- catalogue: generated from src/core/error-codes.ts, do not edit by hand -->";
const END = "<!-- end of catalogue -->";
const CLASS: Record<Fault, string> = { user: "UserError", harness: "HarnessError", engine: "EngineError", infra: "InfraError" };
const FAULTS = Object.keys(ERROR_CODES) as Fault[];

/**
 * Where a bare built-in error is allowed under src/, and why. Everything else throws a catalogued HarnessRLError.
 */
const BARE_ERROR_ALLOWED: Record<string, string> = {
  "src/sandbox/agent/": "the in-sandbox exec agent: Node built-ins only (bind-mounted alone from dist/); the host turns its failures into sandbox_agent",
  "src/tasks/programs/": "program text (the calc tool, verifiers) written into task workspaces and run by plain node in the sandbox",
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith(".ts") ? [full] : [];
  });
}

const sources = sourceFiles(join(ROOT, "src")).map((file) => ({ path: relative(ROOT, file), text: readFileSync(file, "utf8") }));

function renderCatalogue(): string {
  const lines = [BEGIN];
  for (const fault of FAULTS) {
    lines.push("", `### ${fault}: \`${CLASS[fault]}\``, "", "| code | retryable | meaning |", "| --- | --- | --- |");
    const table: Record<string, { meaning: string; retryable: boolean }> = ERROR_CODES[fault];
    for (const code of Object.keys(table).sort()) {
      const info = table[code]!;
      lines.push(`| \`${code}\` | ${info.retryable ? "yes" : "no"} | ${info.meaning.replaceAll("|", "\\|")} |`);
    }
  }
  lines.push("", END);
  return lines.join("\n");
}

describe("error catalogue", () => {
  it("gives every code exactly one fault and one naming scheme (no bad_x beside invalid_x)", () => {
    const seen = new Map<string, Fault>();
    for (const fault of FAULTS) {
      for (const code of Object.keys(ERROR_CODES[fault])) {
        expect(seen.get(code), `${code} is listed under ${seen.get(code)} and ${fault}`).toBeUndefined();
        seen.set(code, fault);
        expect(code).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
        expect(code, "the catalogue spells malformed input invalid_<thing>, a missing one <thing>_not_found").not.toMatch(/^bad_|_bad_|_invalid$|_missing$/);
      }
    }
    expect(seen.size).toBeGreaterThan(100);
  });

  it("knows every code thrown under src/, under the class of its fault", () => {
    const wrong: string[] = [];
    for (const { path, text } of sources) {
      for (const m of text.matchAll(/new (User|Harness|Engine|Infra)Error\(\s*"([^"]+)"/g)) {
        const info = codeInfo(m[2]!);
        if (info === undefined) wrong.push(`${path}: ${m[2]} is not in the catalogue`);
        else if (CLASS[info.fault] !== `${m[1]}Error`) wrong.push(`${path}: ${m[2]} is a ${info.fault} code, thrown as ${m[1]}Error`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("lists no code that nothing under src/ uses", () => {
    const text = sources.filter((s) => s.path !== "src/core/error-codes.ts").map((s) => s.text).join("\n");
    const unused = FAULTS.flatMap((f) => Object.keys(ERROR_CODES[f])).filter((code) => !text.includes(`"${code}"`));
    expect(unused).toEqual([]);
  });

  it("maps every error code the Python trainer worker can send onto the catalogue", () => {
    const dir = join(ROOT, "worker", "harnessrl_worker");
    const py = readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".py")).map((f) => readFileSync(join(dir, f), "utf8"));
    const sent = new Set(py.flatMap((text) => [...text.matchAll(/(?:WorkerError\(|error_body\([\w.]+, |super\(\)\.__init__\()"([a-z_]+)"/g)].map((m) => m[1]!)));
    expect(sent.size).toBeGreaterThan(8);
    expect([...sent].filter((code) => !Object.hasOwn(WORKER_ERROR_CODES, code)).sort()).toEqual([]);
    for (const code of Object.values(WORKER_ERROR_CODES)) expect(codeInfo(code), code).toBeDefined();
  });

  it("is what docs/errors.md lists", () => {
    const doc = readFileSync(DOC, "utf8");
    const start = doc.indexOf(BEGIN);
    const end = doc.indexOf(END);
    expect(start, `docs/errors.md lacks the line ${BEGIN}`).toBeGreaterThanOrEqual(0);
    expect(end).toBeGreaterThan(start);
    const current = doc.slice(start, end + END.length);
    if (process.env.HARNESSRL_WRITE_DOCS === "1" && current !== renderCatalogue()) writeFileSync(DOC, doc.replace(current, renderCatalogue()));
    else expect(current, "docs/errors.md is stale: regenerate it (see this file's header)").toBe(renderCatalogue());
  });

  it("leaves no bare Error thrown under src/ outside the allowlist", () => {
    const bare = /\bnew (?:Error|TypeError|RangeError|SyntaxError|ReferenceError)\(|\bthrow (?:Error|TypeError|RangeError)\(/;
    const offenders: string[] = [];
    const used = new Set<string>();
    for (const { path, text } of sources) {
      text.split("\n").forEach((line, i) => {
        if (!bare.test(line)) return;
        const allowed = Object.keys(BARE_ERROR_ALLOWED).find((prefix) => path.startsWith(prefix));
        if (allowed) used.add(allowed);
        else offenders.push(`${path}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(offenders).toEqual([]);
    // An allowlist entry nothing needs any more goes.
    expect([...used].sort()).toEqual(Object.keys(BARE_ERROR_ALLOWED).sort());
  });
});
