import { constants } from "node:fs";
import { cp, lchown, lstat, mkdir, open, readdir, realpath, stat, type FileHandle } from "node:fs/promises";
import { dirname, isAbsolute, join, normalize, relative, sep } from "node:path";
import { UserError } from "../core/errors.js";
import type { WorkspaceSeed } from "./types.js";

/** Host uid/gid the sandboxed commands run as, when it differs from ours (root control plane → unprivileged sandbox). */
export interface Owner {
  uid: number;
  gid: number;
}

/**
 * Host-side file access to a sandbox directory. The sandboxed program may have planted symlinks, so every access is
 * confined: the relative path may not climb out, the resolved parent must stay inside the root, and the final
 * component is opened with O_NOFOLLOW. (Best used when nothing runs in the sandbox, e.g. after the harness ended.)
 */
export function checkRelativePath(path: string): string {
  if (path.length === 0 || path.includes("\0")) throw new UserError("invalid_sandbox_path", `invalid sandbox path ${JSON.stringify(path)}`);
  const norm = normalize(path);
  if (isAbsolute(norm) || norm === ".." || norm.startsWith(`..${sep}`)) {
    throw new UserError("invalid_sandbox_path", `sandbox path must be relative and stay inside its root: ${JSON.stringify(path)}`);
  }
  return norm;
}

async function confinedParent(root: string, rel: string, create: boolean, owner?: Owner): Promise<string> {
  const realRoot = await realpath(root);
  const parent = dirname(join(realRoot, rel));
  if (create) await mkdirConfined(realRoot, relative(realRoot, parent), owner);
  const realParent = await realpath(parent);
  if (realParent !== realRoot && !realParent.startsWith(realRoot + sep)) {
    throw new UserError("sandbox_path_escape", `sandbox path ${JSON.stringify(rel)} resolves outside its root`);
  }
  return realParent;
}

/** mkdir -p one level at a time, refusing to walk through symlinks. */
async function mkdirConfined(realRoot: string, rel: string, owner?: Owner): Promise<void> {
  if (rel === "" || rel === ".") return;
  let cur = realRoot;
  for (const part of rel.split(sep)) {
    cur = join(cur, part);
    const st = await lstat(cur).catch(() => undefined);
    if (!st) {
      await mkdir(cur);
      if (owner) await lchown(cur, owner.uid, owner.gid);
    }
    else if (!st.isDirectory()) throw new UserError("sandbox_path_escape", `${JSON.stringify(rel)} crosses a non-directory inside the sandbox`);
  }
}

/** Opens a path below `root` for reading, confined as above. */
async function openConfined(root: string, path: string): Promise<FileHandle> {
  const rel = checkRelativePath(path);
  const parent = await confinedParent(root, rel, false);
  // O_NONBLOCK: a FIFO the sandboxed program planted must not block the control plane (no effect on regular files).
  return open(join(parent, rel.split(sep).pop() ?? ""), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
}

export async function readConfined(root: string, path: string): Promise<Buffer> {
  const fh = await openConfined(root, path);
  try {
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}

/** What a confined probe found: a regular file's bytes, something else (a directory, a FIFO), or nothing. */
export type ConfinedEntry = { kind: "file"; data: Buffer } | { kind: "other"; directory: boolean } | { kind: "missing" };

/**
 * A confined look at one path for a reader that must see what an in-sandbox `stat` + `read` would: the entry, read
 * whole when it is a regular file of at most `maxBytes`. Null when that cannot be told safely from the host (the last
 * component is a symlink, a parent resolves outside the root, a socket, a bigger file): the caller then asks the
 * sandbox itself.
 */
export async function probeConfined(root: string, path: string, maxBytes: number): Promise<ConfinedEntry | null> {
  let fh: FileHandle;
  try {
    fh = await openConfined(root, path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === "ENOENT" || code === "ENOTDIR" ? { kind: "missing" } : null;
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) return { kind: "other", directory: st.isDirectory() };
    if (st.size > maxBytes) return null;
    const data = await fh.readFile();
    return data.length > maxBytes ? null : { kind: "file", data };
  } catch {
    return null;
  } finally {
    await fh.close();
  }
}

export async function writeConfined(root: string, path: string, data: string | Uint8Array, owner?: Owner, mode = 0o644): Promise<void> {
  const rel = checkRelativePath(path);
  const parent = await confinedParent(root, rel, true, owner);
  // O_NONBLOCK: opening a planted FIFO for writing fails (ENXIO) instead of waiting forever for a reader.
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  const fh = await open(join(parent, rel.split(sep).pop() ?? ""), flags, mode);
  try {
    await fh.writeFile(data);
    await fh.chmod(mode); // the umask and an existing file's mode must not win
    if (owner) await fh.chown(owner.uid, owner.gid);
  } finally {
    await fh.close();
  }
}

export async function listConfined(root: string, dir: string, maxEntries: number): Promise<string[]> {
  const rel = dir === "" || dir === "." ? "" : checkRelativePath(dir);
  const realRoot = await realpath(root);
  const start = join(realRoot, rel);
  const st = await lstat(start).catch(() => undefined);
  if (!st) return [];
  if (!st.isDirectory()) throw new UserError("sandbox_not_a_directory", `${JSON.stringify(dir)} is not a directory in the sandbox`);
  const out: string[] = [];
  const walk = async (abs: string): Promise<void> => {
    const entries = await readdir(abs, { withFileTypes: true });
    for (const e of entries) {
      if (out.length >= maxEntries) return;
      const p = join(abs, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) out.push(relative(realRoot, p));
    }
  };
  await walk(start);
  return out.sort();
}

/** Hands a whole tree (not following symlinks) to the sandbox's user. */
export async function chownTree(dir: string, owner: Owner): Promise<void> {
  await lchown(dir, owner.uid, owner.gid);
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) await chownTree(p, owner);
    else await lchown(p, owner.uid, owner.gid);
  }
}

/** Fills a fresh workspace from the task's files. */
export async function seedWorkspace(dir: string, seed: WorkspaceSeed | undefined): Promise<void> {
  if (seed === undefined) return;
  if (typeof seed === "string") {
    const st = await stat(seed).catch(() => undefined);
    if (!st?.isDirectory()) throw new UserError("sandbox_seed_not_found", `workspace seed directory ${JSON.stringify(seed)} does not exist`);
    await cp(seed, dir, { recursive: true, verbatimSymlinks: true, force: true });
    return;
  }
  for (const [path, contents] of Object.entries(seed)) await writeConfined(dir, path, contents);
}
