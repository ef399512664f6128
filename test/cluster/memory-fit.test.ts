import { describe, expect, it } from "vitest";
import { memoryFit, memoryFitWarning, nodeTakesMemory } from "../../src/cluster/memory-fit.js";
import { jobMemoryBytes } from "../../src/cluster/node.js";

/** Which nodes take a job of a given memoryMb, and the control plane's warning when some or all of them do not. */
const node = (nodeId: string, capacity: number, maxMemoryMb: number | null) => ({ nodeId, capacity, maxMemoryMb });

describe("which nodes take a job's memoryMb", () => {
  it("a node takes what fits under its cap (equal fits), anything when uncapped, and a job without memoryMb always", () => {
    expect(nodeTakesMemory(1024, 1024)).toBe(true);
    expect(nodeTakesMemory(1024, 1025)).toBe(false);
    expect(nodeTakesMemory(null, 1_048_576)).toBe(true);
    expect(nodeTakesMemory(undefined, 4096)).toBe(true);
    expect(nodeTakesMemory(16, undefined)).toBe(true);
  });

  it("agrees with what a node actually does with the job (jobMemoryBytes: null = refused)", () => {
    for (const cap of [undefined, 16, 1024, 2048]) {
      for (const asked of [undefined, 16, 1024, 1025, 4096]) expect(nodeTakesMemory(cap, asked), `cap ${cap} asked ${asked}`).toBe(jobMemoryBytes(asked, cap) !== null);
    }
  });

  it("splits the nodes and counts the slots of those that fit", () => {
    const nodes = [node("a", 4, 2048), node("b", 2, null), node("c", 8, 1024)];
    const fit = memoryFit(nodes, 2048);
    expect(fit.fit.map((n) => n.nodeId)).toEqual(["a", "b"]);
    expect(fit.short.map((n) => n.nodeId)).toEqual(["c"]);
    expect([fit.fitSlots, fit.slots]).toEqual([6, 14]);
    expect(memoryFit(nodes, undefined).short).toEqual([]);
  });
});

describe("the control plane's warning", () => {
  it("is silent when every node fits, when the run asks no memory, and when no node is up", () => {
    expect(memoryFitWarning([node("a", 4, 2048), node("b", 2, null)], 2048)).toBeNull();
    expect(memoryFitWarning([node("a", 4, 512)], undefined)).toBeNull();
    expect(memoryFitWarning([], 4096)).toBeNull();
  });

  it("none fits: says no node can take the jobs, naming every cap and the error the jobs will fail with", () => {
    const w = memoryFitWarning([node("a", 4, 2048), node("b", 2, 1024)], 4096);
    expect(w).toBe(
      "warning: no node up can take this run's jobs: they ask for 4096 MiB of sandbox memory and all 2 node(s) up (6 slots) are capped below it (a 2048 MiB, b 1024 MiB; --max-memory-mb). A job any of them takes fails for good with cluster_job_memory_over_cap; start a node with a larger cap or none, or lower the run's memory.",
    );
  });

  it("some fit: says how many nodes and slots can, and names the caps of the others", () => {
    const w = memoryFitWarning([node("big", 4, null), node("mid", 2, 4096), node("small", 8, 1024)], 2048);
    expect(w).toBe(
      "warning: only 2 of 3 node(s) up (6 of 14 slots) can take this run's jobs of 2048 MiB of sandbox memory; the other 1 node(s) are capped below it (small 1024 MiB; --max-memory-mb), and a job one of them takes fails for good with cluster_job_memory_over_cap.",
    );
  });

  it("names at most ten capped nodes", () => {
    const many = Array.from({ length: 13 }, (_, i) => node(`n${i}`, 1, 512));
    const w = memoryFitWarning(many, 1024) ?? "";
    expect(w).toContain("n9 512 MiB, and 3 more; --max-memory-mb");
    expect(w).not.toContain("n10 ");
  });
});
