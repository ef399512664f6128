/**
 * Whether a node capped at `capMb` MiB of sandbox memory (`--max-memory-mb`; null or undefined: no cap) takes a job
 * asking `askedMb` (its `settings.memoryMb`; undefined: the node's own default, which it lowers to its cap, so every
 * node takes it). The node's refusal (`jobMemoryBytes` in node.ts) and the control plane's warning both ask this.
 */
export function nodeTakesMemory(capMb: number | null | undefined, askedMb: number | undefined): boolean {
  return askedMb === undefined || capMb === null || capMb === undefined || askedMb <= capMb;
}

/** What a memory-fit check needs of a node's heartbeat. */
export interface MemoryFitNode {
  nodeId: string;
  capacity: number;
  maxMemoryMb: number | null;
}

/** The live nodes split by whether they take jobs asking `memoryMb`, with the slots (capacity) of those that do. */
export function memoryFit<N extends MemoryFitNode>(nodes: readonly N[], memoryMb: number | undefined): { fit: N[]; short: N[]; slots: number; fitSlots: number } {
  const fit = nodes.filter((n) => nodeTakesMemory(n.maxMemoryMb, memoryMb));
  const short = nodes.filter((n) => !nodeTakesMemory(n.maxMemoryMb, memoryMb));
  const sum = (ns: readonly N[]): number => ns.reduce((s, n) => s + n.capacity, 0);
  return { fit, short, slots: sum(nodes), fitSlots: sum(fit) };
}

/**
 * A warning line when nodes are up and some or all of them are capped below a run's `memoryMb`, else null (no node
 * up, no memoryMb, or every node takes it). Not a refusal: nodes may join later. But any node pulls any job, and a
 * capped node that pulls one asking more than its cap fails it for good (`cluster_job_memory_over_cap`), so in a
 * cluster of mixed caps a run's jobs can fail even while a larger node is idle: the line says so.
 */
export function memoryFitWarning(nodes: readonly MemoryFitNode[], memoryMb: number | undefined): string | null {
  if (memoryMb === undefined || nodes.length === 0) return null;
  const { fit, short, slots, fitSlots } = memoryFit(nodes, memoryMb);
  if (short.length === 0) return null;
  const SHOWN = 10;
  const caps = short
    .slice(0, SHOWN)
    .map((n) => `${n.nodeId} ${n.maxMemoryMb ?? "?"} MiB`)
    .join(", ");
  const more = short.length > SHOWN ? `, and ${short.length - SHOWN} more` : "";
  const capped = `(${caps}${more}; --max-memory-mb)`;
  const fails = "fails for good with cluster_job_memory_over_cap";
  if (fit.length === 0) {
    return `warning: no node up can take this run's jobs: they ask for ${memoryMb} MiB of sandbox memory and all ${nodes.length} node(s) up (${slots} slots) are capped below it ${capped}. A job any of them takes ${fails}; start a node with a larger cap or none, or lower the run's memory.`;
  }
  return `warning: only ${fit.length} of ${nodes.length} node(s) up (${fitSlots} of ${slots} slots) can take this run's jobs of ${memoryMb} MiB of sandbox memory; the other ${short.length} node(s) are capped below it ${capped}, and a job one of them takes ${fails}.`;
}
