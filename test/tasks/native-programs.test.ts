import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join, posix } from "node:path";
import { describe, expect, it } from "vitest";
import { CALC_PROGRAM } from "../../src/tasks/programs/calc.js";
import { runInVm, type VmEntry } from "../../src/tasks/programs/vm-run.js";
import { TOOL_LOG_DIR } from "../../src/tasks/task.js";
import { tempDirs } from "../temp-dirs.js";

const tempDir = tempDirs();

interface Outcome {
  stdout: string;
  stderr: string;
  exitCode: number;
  log: string;
}

/** The real program: `node ./calc ARGS` in a fresh folder, as the tool sandbox runs it. */
function realCalc(args: string[]): Outcome {
  const dir = tempDir("hrl-calc-real-");
  writeFileSync(join(dir, "calc"), CALC_PROGRAM, { mode: 0o755 });
  const r = spawnSync(process.execPath, ["./calc", ...args], { cwd: dir, encoding: "utf8" });
  let log = "";
  try {
    log = readFileSync(join(dir, TOOL_LOG_DIR, "calc.jsonl"), "utf8");
  } catch {
    // no call was logged
  }
  return { stdout: r.stdout, stderr: r.stderr, exitCode: r.status ?? -1, log };
}

function nativeCalc(args: string[]): Outcome | string {
  const r = runInVm(CALC_PROGRAM, { args, scriptPath: "/workspace/calc", cwd: "/workspace", lookup: () => undefined, writableDir: `/workspace/${TOOL_LOG_DIR}`, timeoutMs: 5000 });
  if (r.status !== "done") return r.status === "unsupported" ? `unsupported: ${r.reason}` : "needs";
  const log = r.appended.get(`/workspace/${TOOL_LOG_DIR}/calc.jsonl`)?.toString("utf8") ?? "";
  return { stdout: r.stdout.toString("utf8"), stderr: r.stderr.toString("utf8"), exitCode: r.exitCode, log };
}

describe("./calc run in the control plane (vm-run) against the same program as a process", () => {
  it("gives the same stdout, stderr, exit code and log line for every kind of call, good and bad", () => {
    const cases: string[][] = [
      ["2 + 3 * 4"], ["(2 + 3) * 4"], ["7 × 6"], ["84 ÷ 4"], ["7/2"], ["1/0"], ["2.5 x 4"], ["0.1 + 0.2"], ["1,000 + 2"],
      ["99999999999999999999 * 99999999999999999999"], ["- -3"], ["−3 + 1"], ["abc"], ["(1 + 2"], ["1 + 2)"], ["1e5"],
      ["3", "+", "4"], [], [" "], [""], [".5 * 4"], ["1..2"], ["((((1))))"], ["12 / 0.0"],
    ];
    for (const args of cases) expect(nativeCalc(args), JSON.stringify(args)).toEqual(realCalc(args));
  });

  it("hands a program back to the sandbox where the process would differ: a recursion too deep for the control plane's stack", () => {
    const deep = `${"(".repeat(20_000)}1${")".repeat(20_000)}`;
    expect(nativeCalc([deep])).toBe("unsupported: stack overflow");
  });
});

describe("what vm-run offers a program, and where it stops", () => {
  const run = (code: string, lookup: (p: string) => VmEntry | undefined = () => undefined, timeoutMs = 1000) =>
    runInVm(code, { args: ["a"], scriptPath: "/w/d/p.cjs", cwd: "/w", lookup, writableDir: "/w/d/out", timeoutMs });

  it("runs process.exit and process.exitCode as node does, output up to the exit only", () => {
    const r = run(`process.stdout.write("x"); process.exitCode = 3;`);
    expect(r).toMatchObject({ status: "done", exitCode: 3 });
    const e = run(`process.stderr.write("e"); process.exit(4); process.stdout.write("never")`);
    expect(e.status === "done" && [e.exitCode, e.stdout.toString(), e.stderr.toString()]).toEqual([4, "", "e"]);
  });

  it("answers reads from the caller's view and asks for paths it does not know yet", () => {
    const view = new Map<string, VmEntry>([["/w/in.txt", { kind: "file", data: Buffer.from("hi") }], ["/w/gone", { kind: "missing" }]]);
    const code = `const fs = require("fs"); let gone = "no"; try { fs.statSync("gone"); } catch (e) { gone = e.code; }
      process.stdout.write(fs.readFileSync("in.txt", "utf8") + " " + gone + " " + fs.existsSync("/w/other"));`;
    expect(run(code, (p) => view.get(p))).toEqual({ status: "needs", paths: ["/w/other"] });
    view.set("/w/other", { kind: "other", directory: true });
    const r = run(code, (p) => view.get(p));
    expect(r.status === "done" && r.stdout.toString()).toBe("hi ENOENT true");
  });

  it("keeps appends below the program's writable folder and returns them", () => {
    const r = run(`const fs = require("fs"); fs.mkdirSync("/w/d/out", { recursive: true }); fs.appendFileSync("/w/d/out/log", "1\\n"); fs.appendFileSync("/w/d/out/log", "2\\n");`);
    expect(r.status === "done" && posix.basename([...r.appended.keys()][0] ?? "") + ":" + r.appended.get("/w/d/out/log")?.toString()).toBe("log:1\n2\n");
  });

  it("ends as unsupported, never as a result, when a program steps outside what is offered", () => {
    const cases: [string, RegExp][] = [
      [`require("child_process")`, /requires child_process/],
      [`require("fs").appendFileSync("/w/elsewhere", "x")`, /writes \/w\/elsewhere/],
      [`console.log("x")`, /uses console/],
      [`throw new Error("boom")`, /uncaught: boom/],
      [`while (true) {}`, /timed out/],
      [`try { process.exit(1) } catch (e) {} process.stdout.write("after exit")`, /went on after process.exit/],
      [`try { require("net") } catch (e) {} process.stdout.write("swallowed")`, /requires net/],
    ];
    for (const [code, why] of cases) {
      const r = run(code, () => undefined, 200);
      expect(r.status, code).toBe("unsupported");
      expect(r.status === "unsupported" && r.reason, code).toMatch(why);
    }
  });

  it("reports a read it had to guess as needed even when the program swallowed the error", () => {
    const r = run(`let t = null; try { t = require("fs").readFileSync("/w/x", "utf8"); } catch (e) {} process.stdout.write(String(t));`);
    expect(r).toEqual({ status: "needs", paths: ["/w/x"] });
  });

  it("does not see the control plane: no host globals, no real file system", () => {
    const r = run(`process.stdout.write([typeof Buffer, typeof globalThis.process.env.HOME, typeof setTimeout, typeof fetch].join(","));`);
    expect(r.status === "done" && r.stdout.toString()).toBe("undefined,undefined,undefined,undefined");
  });
});
