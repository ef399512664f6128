import { stat } from "node:fs/promises";
import { errorMessage } from "../core/errors.js";
import { SandboxCgroup } from "./cgroups.js";
import { isOwnerAlive, killBySandboxId, listStates, removeDir } from "./state.js";
import type { ReapReport } from "./types.js";

/** A state dir without a readable state.json younger than this may be a create in progress elsewhere. */
const HALF_CREATED_GRACE_MS = 60_000;

/**
 * Removes sandboxes whose owning control plane is gone: kills what still runs in them (their cgroups, and any process
 * carrying their HARNESSRL_SANDBOX_ID, which finds the unsandboxed backend's strays), removes their cgroups and
 * directories. Sandboxes of live control planes, including other processes sharing the state root, are left alone.
 */
export async function reapOrphans(stateRoot: string): Promise<ReapReport> {
  const report: ReapReport = { reaped: [], killedProcesses: 0, errors: [] };
  for (const entry of await listStates(stateRoot)) {
    try {
      if (entry.state === undefined) {
        const st = await stat(entry.dir).catch(() => undefined);
        if (st && Date.now() - st.mtimeMs < HALF_CREATED_GRACE_MS) continue;
      } else if (isOwnerAlive(entry.state)) {
        continue;
      }
      if (entry.state) {
        const cgroup = new SandboxCgroup(entry.state.cgroups);
        report.killedProcesses += cgroup.killAll();
        report.errors.push(...cgroup.remove());
      }
      report.killedProcesses += await killBySandboxId(entry.id);
      if (entry.state?.mountDir) await removeDir(entry.state.mountDir);
      await removeDir(entry.dir);
      report.reaped.push(entry.id);
    } catch (e) {
      report.errors.push(`${entry.id}: ${errorMessage(e)}`);
    }
  }
  return report;
}
