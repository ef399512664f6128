/**
 * The disk meter: a small long-lived child of the control plane that measures sandboxes' directories with GNU du.
 *
 * Why a separate process: forking costs the parent time in proportion to its mapped memory, and the control plane
 * holds the llama.cpp engine (hundreds of MB). Measured: 40 ms of system time per `du` spawned from a process holding
 * 1 GB, 1.2 ms from a small one; 16 rollouts' disk polls (every 250 ms each) spent 142 s of system time in a 204 s
 * rollout step. From here each du forks a ~40 MB process, and requests that arrive while a du runs share the next one.
 *
 * Protocol (JSON lines): stdin `{"id": n, "roots": [dir, …]}`, stdout `{"id": n, "bytes": N}` or `{"id": n, "error":
 * "…"}`. Bytes are allocated blocks below the roots, symlinks not followed; an inode linked from several roots of one
 * du run counts once, which only matters within one sandbox's workspace and HOME (sandboxes cannot link into each
 * other's directories), as with the `du -c` this replaces. Exits when stdin closes: it never outlives the control plane.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";

interface Request {
  id: number;
  roots: string[];
}

let queue: Request[] = [];
let running = false;

function reply(message: object): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

/** Sizes per root from `du -s -B1 -P -0` output ("<bytes>\t<path>\0" per root; vanished roots are missing). */
function parseDu(out: string): Map<string, number> {
  const sizes = new Map<string, number>();
  for (const entry of out.split("\0")) {
    const tab = entry.indexOf("\t");
    if (tab <= 0) continue;
    const bytes = Number(entry.slice(0, tab));
    if (Number.isFinite(bytes)) sizes.set(entry.slice(tab + 1), bytes);
  }
  return sizes;
}

function runDu(roots: string[]): Promise<Map<string, number>> {
  return new Promise((resolve, reject) => {
    execFile("du", ["-s", "-B1", "-P", "-0", "--", ...roots], { timeout: 30_000, maxBuffer: 16 << 20 }, (error, stdout) => {
      // du exits 1 when an entry vanished meanwhile but still prints every root it could measure; when every root
      // vanished (a sandbox torn down while its poll waited) they hold nothing. Only a real failure is an error: the
      // control plane then measures for itself, which is the fork this process exists to avoid.
      const sizes = parseDu(stdout);
      if (error && sizes.size === 0 && roots.some((root) => existsSync(root))) reject(error);
      else resolve(sizes);
    });
  });
}

async function drain(): Promise<void> {
  if (running) return;
  running = true;
  while (queue.length > 0) {
    const batch = queue;
    queue = [];
    // Each root once (GNU du prints a repeated argument once); the requests then read their roots' sizes from the map.
    const roots = [...new Set(batch.flatMap((r) => r.roots))];
    try {
      const sizes = await runDu(roots);
      for (const r of batch) reply({ id: r.id, bytes: r.roots.reduce((sum, root) => sum + (sizes.get(root) ?? 0), 0) });
    } catch (e) {
      for (const r of batch) reply({ id: r.id, error: e instanceof Error ? e.message : String(e) });
    }
  }
  running = false;
}

function parseRequest(line: string): Request | undefined {
  try {
    const v = JSON.parse(line) as { id?: unknown; roots?: unknown };
    if (typeof v.id !== "number" || !Array.isArray(v.roots) || !v.roots.every((r) => typeof r === "string" && r.startsWith("/"))) return undefined;
    return { id: v.id, roots: v.roots as string[] };
  } catch {
    return undefined;
  }
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const request = parseRequest(line);
  if (!request) return; // only the control plane writes here; a line it did not write is dropped
  queue.push(request);
  void drain();
});
lines.on("close", () => process.exit(0));
