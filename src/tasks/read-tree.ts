import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { UserError } from "../core/errors.js";
import type { FileEntry, FileMap } from "./task.js";

/** Reads every regular file under `root` into a file map (relative POSIX paths; binary files as base64). */
export async function readTree(root: string): Promise<FileMap> {
  const out: FileMap = {};
  async function walk(dir: string, prefix: string): Promise<void> {
    const entries = await readdir(dir, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const ent of entries) {
      const full = join(dir, ent.name);
      const rel = prefix ? `${prefix}/${ent.name}` : ent.name;
      if (ent.isDirectory()) await walk(full, rel);
      else if (ent.isFile()) out[rel] = await readEntry(full);
      else throw new UserError("invalid_task", `${full}: only regular files and folders are allowed in a task`);
    }
  }
  await walk(root, "");
  return out;
}

async function readEntry(path: string): Promise<FileEntry> {
  const [data, st] = await Promise.all([readFile(path), stat(path)]);
  const executable = (st.mode & 0o111) !== 0;
  const text = data.toString("utf8");
  const isText = Buffer.from(text, "utf8").equals(data);
  if (isText && !executable) return text;
  return isText ? { content: text, encoding: "utf8", executable } : { content: data.toString("base64"), encoding: "base64", executable };
}

export async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

export async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
