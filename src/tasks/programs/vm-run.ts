/**
 * Runs one of our own built-in task programs (a CommonJS script: the `calc` tool, a verifier) inside the control
 * plane instead of as a process in a sandbox: the same program text in a fresh V8 context, against a file view the
 * caller supplies. A sandboxed run costs a node start (~70 ms of CPU) and, for host tools, a whole sandbox; these
 * programs are pure functions of their argv and a few files, and they are a large share of a quickstart rollout.
 *
 * Only what such a program can do identically here is offered: `require("fs")` (stat, read, exists, mkdir, append),
 * `require("path")`, `process` (argv, cwd, stdout/stderr writes, exit, exitCode). Anything else — another module, a
 * global it does not have, an uncaught exception, a write outside the program's own directory, running past the
 * time budget — ends the run as `unsupported`, and the caller runs the real program in its sandbox instead. Reads of
 * paths the view does not know yet end it as `needs`: the caller fetches them and runs it again (the programs are
 * deterministic), so it never has to guess which files a program will read.
 */
import { posix } from "node:path";
import { Script, createContext } from "node:vm";

/** A path as the program would find it. */
export type VmEntry = { kind: "file"; data: Buffer } | { kind: "other"; directory: boolean } | { kind: "missing" };

export interface VmRunOptions {
  /** Arguments after the program's path (`process.argv.slice(2)`). */
  args: string[];
  /** Absolute path of the program as it would run (its `__dirname` and `process.argv[1]`). */
  scriptPath: string;
  cwd: string;
  /** The file view by absolute path; undefined: not known yet (the run ends as `needs`). */
  lookup: (path: string) => VmEntry | undefined;
  /** Writes (mkdir, append) are allowed below this directory only. */
  writableDir: string;
  timeoutMs: number;
}

export type VmRunResult =
  | { status: "done"; stdout: Buffer; stderr: Buffer; exitCode: number; appended: Map<string, Buffer> }
  | { status: "needs"; paths: string[] }
  | { status: "unsupported"; reason: string };

/** Thrown through the program to stop it; a program that catches and goes on is caught by `ended` below. */
class Stop {
  constructor(readonly reason: "exit" | "unsupported" | "needs") {}
}

const scripts = new Map<string, Script>();
const STACK_OVERFLOW = "Maximum call stack size exceeded";

function compiled(code: string): Script {
  let s = scripts.get(code);
  if (!s) {
    s = new Script(code, { filename: "builtin-program.cjs" });
    scripts.set(code, s);
  }
  return s;
}

/** An error's message, whichever realm made it (the program's errors are not instances of our Error). */
function messageOf(e: unknown): string {
  const m = typeof e === "object" && e !== null ? (e as { message?: unknown }).message : undefined;
  return typeof m === "string" ? m : String(e);
}

/** What node's fs throws, a plain Error with `code`: the programs look at `e.code`, never at our error types. */
function errnoError(code: string, syscall: string, path: string): Error {
  const text = code === "ENOENT" ? "no such file or directory" : code === "EISDIR" ? "illegal operation on a directory" : "invalid argument";
  return Object.assign(new Error(`${code}: ${text}, ${syscall} '${path}'`), { code, errno: code === "ENOENT" ? -2 : -21, syscall, path });
}

export function runInVm(code: string, options: VmRunOptions): VmRunResult {
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  const appended = new Map<string, Buffer>();
  const needs = new Set<string>();
  let unsupported = "";
  let exitCode: number | undefined;
  let processExitCode: unknown;

  const stop = (reason: "unsupported" | "needs", why = ""): never => {
    if (reason === "unsupported" && !unsupported) unsupported = why;
    throw new Stop(reason);
  };
  /** After exit() the program must not go on (it would have been gone). */
  const alive = (): void => {
    if (exitCode !== undefined) stop("unsupported", "the program went on after process.exit");
  };
  const abs = (p: unknown): string => {
    if (typeof p !== "string") return stop("unsupported", "a non-string path");
    return posix.resolve(options.cwd, p);
  };
  const entry = (p: unknown): VmEntry => {
    alive();
    const path = abs(p);
    if (appended.has(path)) return stop("unsupported", `reads ${path}, which it wrote`);
    const e = options.lookup(path);
    if (e === undefined) {
      needs.add(path);
      return stop("needs");
    }
    return e;
  };
  const statOf = (e: VmEntry, path: string, syscall: string): object => {
    if (e.kind === "missing") throw errnoError("ENOENT", syscall, path);
    const file = e.kind === "file";
    const directory = e.kind === "other" && e.directory;
    return { isFile: () => file, isDirectory: () => directory, isSymbolicLink: () => false, size: file ? e.data.length : 0 };
  };
  const writable = (p: unknown): string => {
    alive();
    const path = abs(p);
    const dir = posix.resolve(options.writableDir);
    if (path !== dir && !path.startsWith(`${dir}/`)) return stop("unsupported", `writes ${path}`);
    return path;
  };
  const text = (data: unknown): Buffer => {
    if (typeof data === "string") return Buffer.from(data, "utf8");
    return stop("unsupported", "writes something other than a string");
  };

  const fs = {
    statSync: (p: unknown) => statOf(entry(p), abs(p), "stat"),
    // The view never holds symlinks (the caller answers "unknown" for those and the real program runs instead).
    lstatSync: (p: unknown) => statOf(entry(p), abs(p), "lstat"),
    existsSync: (p: unknown) => entry(p).kind !== "missing",
    readFileSync: (p: unknown, enc?: unknown) => {
      const e = entry(p);
      if (e.kind === "missing") throw errnoError("ENOENT", "open", abs(p));
      if (e.kind === "other") {
        if (e.directory) throw errnoError("EISDIR", "read", abs(p));
        return stop("unsupported", "reads a special file");
      }
      const encoding = typeof enc === "string" ? enc : typeof enc === "object" && enc !== null ? (enc as { encoding?: unknown }).encoding : undefined;
      if (encoding === undefined || encoding === null) return Buffer.from(e.data);
      if (encoding !== "utf8" && encoding !== "utf-8") return stop("unsupported", `reads with encoding ${String(encoding)}`);
      return e.data.toString("utf8");
    },
    mkdirSync: (p: unknown) => void writable(p),
    appendFileSync: (p: unknown, data: unknown) => {
      const path = writable(p);
      appended.set(path, Buffer.concat([appended.get(path) ?? Buffer.alloc(0), text(data)]));
    },
  };
  const proc = {
    argv: ["node", options.scriptPath, ...options.args],
    env: {},
    platform: "linux",
    cwd: () => options.cwd,
    stdout: { write: (s: unknown) => (alive(), stdout.push(text(s)), true) },
    stderr: { write: (s: unknown) => (alive(), stderr.push(text(s)), true) },
    exit: (code?: unknown) => {
      alive();
      exitCode = typeof code === "number" && Number.isInteger(code) ? code & 0xff : code === undefined ? Number(processExitCode ?? 0) : stop("unsupported", "exit with a non-integer code");
      throw new Stop("exit");
    },
    get exitCode(): unknown {
      return processExitCode;
    },
    set exitCode(v: unknown) {
      processExitCode = v;
    },
  };
  const require = (name: unknown): unknown => {
    if (name === "fs" || name === "node:fs") return fs;
    if (name === "path" || name === "node:path") return posix;
    return stop("unsupported", `requires ${String(name)}`);
  };
  const globals = { require, process: proc, __dirname: posix.dirname(options.scriptPath), __filename: options.scriptPath };
  // V8 gives every context a `console` that prints nowhere: a program using it would lose its output silently.
  Object.defineProperty(globals, "console", { get: () => stop("unsupported", "uses console") });
  const context = createContext(globals);

  try {
    compiled(code).runInContext(context, { timeout: options.timeoutMs });
  } catch (e) {
    if (!(e instanceof Stop && e.reason === "exit")) {
      if (needs.size > 0 && !unsupported) return { status: "needs", paths: [...needs] };
      return { status: "unsupported", reason: unsupported || (e instanceof Stop ? "stopped" : `uncaught: ${messageOf(e)}`) };
    }
  }
  // A program that caught our stop and carried on read or did something it must not have: the result is not its own.
  if (unsupported) return { status: "unsupported", reason: unsupported };
  if (needs.size > 0) return { status: "needs", paths: [...needs] };
  if (exitCode === undefined) {
    const c = processExitCode;
    if (c !== undefined && !(typeof c === "number" && Number.isInteger(c))) return { status: "unsupported", reason: "a non-integer exitCode" };
    exitCode = c === undefined ? 0 : (c as number) & 0xff;
  }
  const out = { stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr) };
  // How deep a program may recurse differs here (it runs on the control plane's stack): a program that caught a
  // stack overflow and reported it would have reported something else, or nothing, as its own process.
  for (const b of [out.stdout, out.stderr, ...appended.values()]) if (b.includes(STACK_OVERFLOW)) return { status: "unsupported", reason: "stack overflow" };
  return { status: "done", ...out, exitCode, appended };
}
