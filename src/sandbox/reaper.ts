import { errorMessage } from "../core/errors.js";
import { SandboxCgroup } from "./cgroups.js";
import { isOwnerAlive, killBySandboxId, listStates, mayBeHalfCreated, removeDir } from "./state.js";
import type { ReapReport } from "./types.js";

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
        if (await mayBeHalfCreated(entry.dir)) continue;
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
