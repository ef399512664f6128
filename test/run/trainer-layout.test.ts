import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildRunContext } from "../../src/run/context.js";
import { parseRunConfig } from "../../src/train/config.js";
import { distributedArgs } from "../../src/trainer/worker-client.js";

describe("trainer ranks in a run config (trainer.world_size …)", () => {
  const root = mkdtempSync(join(tmpdir(), "hrl-layout-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const base = { model: { preset: "tiny-1m" }, harnesses: ["chat-agent"], tasks: { train: "calcrun:train" } };

  it("is one process by default: no rank flags reach the worker", () => {
    const ctx = buildRunContext(parseRunConfig(base), { runDir: join(root, "one") });
    expect(ctx.trainer.policy.distributed).toBeUndefined();
    expect(ctx.trainer.reference.distributed).toBeUndefined();
    expect(distributedArgs(ctx.trainer.policy.distributed)).toEqual([]);
  });

  it("starts all ranks here with world_size alone, and the reference scorer over the same ranks", () => {
    const ctx = buildRunContext(parseRunConfig({ ...base, trainer: { world_size: 2, threads: 1 } }), { runDir: join(root, "two") });
    expect(ctx.trainer.policy).toMatchObject({ threads: 1, distributed: { worldSize: 2, localRanks: 2 } });
    expect(ctx.trainer.reference.distributed).toEqual({ worldSize: 2, localRanks: 2 });
    expect(distributedArgs(ctx.trainer.policy.distributed)).toEqual(["--world-size", "2", "--rank", "0", "--local-ranks", "2"]);
  });

  it("spans machines with local_ranks, master_addr and master_port; the reference stays on this machine's ranks", () => {
    const trainer = { world_size: 4, local_ranks: 2, master_addr: "10.0.0.1", master_port: 29500 };
    const ctx = buildRunContext(parseRunConfig({ ...base, trainer }), { runDir: join(root, "nodes") });
    expect(ctx.trainer.policy.distributed).toEqual({ worldSize: 4, localRanks: 2, masterAddr: "10.0.0.1", masterPort: 29500 });
    expect(ctx.trainer.reference.distributed).toEqual({ worldSize: 2, localRanks: 2 });
    expect(distributedArgs(ctx.trainer.policy.distributed)).toEqual(["--world-size", "4", "--rank", "0", "--local-ranks", "2", "--master-addr", "10.0.0.1", "--master-port", "29500"]);
  });

  it("refuses ranks on other machines without a port, and more local ranks than ranks", () => {
    expect(() => parseRunConfig({ ...base, trainer: { world_size: 4, local_ranks: 2 } })).toThrow(/master_port/);
    expect(() => parseRunConfig({ ...base, trainer: { world_size: 2, local_ranks: 3 } })).toThrow(/local_ranks/);
  });
});
