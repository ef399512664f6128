import { readFile, lstat, mkdir, chmod, readdir } from "node:fs/promises";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { InfraError, errorMessage } from "../../core/errors.js";
import { isOwnerAlive, mayBeHalfCreated, ownerIdentity, removeDir } from "../state.js";

/**
 * The mount root: where each bwrap sandbox's bound directories live, one `<32 hex>` directory per sandbox. A bind
 * mount's source path shows in the sandbox's /proc/self/mountinfo, so this path must say nothing about the host's run
 * layout (no run directory, state root, project or user name).
 */

const MOUNT_DIR = /^[0-9a-f]{32}$/;

/**
 * Made or checked: a directory of ours, not a symlink (another user of a shared /tmp could have planted one), 0711 so
 * the sandbox user can reach its sandbox's directory but nobody can list the others. Falls back to
 * `<stateRoot>/cells` (with a warning) when the default one cannot be used.
 */
export async function mountRootFor(requested: string | undefined, stateRoot: string, warnings: string[]): Promise<string> {
  const root = resolve(requested ?? `/tmp/harnessrl-cells-${process.getuid?.() ?? 0}`);
  try {
    await mkdir(root, { recursive: true, mode: 0o711 });
    const st = await lstat(root);
    if (!st.isDirectory() || st.uid !== (process.getuid?.() ?? st.uid)) throw new InfraError("sandbox_mount_root", `${root} is not a directory of ours`);
    await chmod(root, 0o711);
    return root;
  } catch (e) {
    if (requested !== undefined) throw e instanceof InfraError ? e : new InfraError("sandbox_mount_root", `sandbox mount root ${root}: ${errorMessage(e)}`);
    const fallback = join(stateRoot, "cells");
    warnings.push(`cannot use ${root} for sandbox directories (${errorMessage(e)}): using ${fallback}, whose path sandboxes can see`);
    await mkdir(fallback, { recursive: true, mode: 0o711 });
    return fallback;
  }
}

/** Names the mount directory's owner inside it (not bound into the sandbox), for sweepMountRoot. */
export function writeMountOwnerSync(mountDir: string): void {
  writeFileSync(join(mountDir, "owner.json"), JSON.stringify(ownerIdentity()));
}

/**
 * Removes mount directories whose owning control plane is gone. The state-root reaper removes a sandbox's mount
 * directory with its state; this catches those whose state directory went first (a state root deleted after a crash).
 * Returns errors.
 */
export async function sweepMountRoot(root: string): Promise<string[]> {
  const errors: string[] = [];
  for (const name of await readdir(root).catch(() => [] as string[])) {
    if (!MOUNT_DIR.test(name)) continue;
    const dir = join(root, name);
    try {
      const raw = await readFile(join(dir, "owner.json"), "utf8").catch(() => undefined);
      if (raw === undefined) {
        if (await mayBeHalfCreated(dir)) continue;
      } else {
        const owner = JSON.parse(raw) as { ownerPid?: unknown; ownerStartTime?: unknown };
        if (typeof owner.ownerPid === "number" && typeof owner.ownerStartTime === "string" && isOwnerAlive({ ownerPid: owner.ownerPid, ownerStartTime: owner.ownerStartTime })) continue;
      }
      await removeDir(dir);
    } catch (e) {
      errors.push(`${dir}: ${errorMessage(e)}`);
    }
  }
  return errors;
}
