import { z } from "zod";
import { errorMessage } from "../../core/errors.js";
import type { Cell } from "./cell.js";

export const PoolOptionsSchema = z.object({
  /** Warm sandboxes kept ready (0 disables the pool). */
  size: z.number().int().min(0).max(256),
});
export type PoolOptions = z.infer<typeof PoolOptionsSchema>;

/** Two warm sandboxes: the next create is instant, and they cost ~10 MB each while they wait. */
export const DEFAULT_POOL: PoolOptions = { size: 2 };

/**
 * A refill waits this long after a take: the start it would run (a fork of the control plane, node starting in the new
 * sandbox) would otherwise compete with the create and first exec the pool just served.
 */
const REFILL_DELAY_MS = 100;

export interface PoolStats {
  size: number;
  idle: number;
  /** Creates served from the pool / started cold because no matching warm sandbox was ready. */
  hits: number;
  misses: number;
}

/** Cells differ only by their mounts; the backend's hidePaths are the same for all, so readOnlyPaths is the key. */
function keyOf(readOnlyPaths: string[]): string {
  return JSON.stringify(readOnlyPaths);
}

/**
 * Pre-started sandboxes (bwrap + agent running, empty workspace and HOME, cgroups created) waiting for `create()`.
 * Which mounts to keep warm follows demand: the last `size` creates' readOnlyPaths decide how many cells of each kind
 * are kept, so a run with one harness gets all `size` for it and a mix gets a share each. Refills run in the
 * background, one cell at a time (a start costs a core for tens of milliseconds; two cores are shared).
 */
export class WarmPool {
  private readonly idle = new Map<string, Cell[]>();
  private readonly pathsOf = new Map<string, string[]>();
  private readonly demand: string[];
  private filling: Promise<void> | undefined;
  private refillTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private hits = 0;
  private misses = 0;
  private readonly warned = new Set<string>();

  constructor(
    private readonly size: number,
    private readonly prepare: (readOnlyPaths: string[]) => Promise<Cell>,
    private readonly discard: (cell: Cell) => Promise<void>,
  ) {
    this.pathsOf.set(keyOf([]), []);
    this.demand = Array.from({ length: size }, () => keyOf([]));
  }

  /** A ready cell with these mounts, if one is waiting; records the demand and refills in the background. */
  take(readOnlyPaths: string[]): Cell | undefined {
    if (this.size === 0 || this.closed) return undefined;
    const key = keyOf(readOnlyPaths);
    this.pathsOf.set(key, [...readOnlyPaths]);
    this.demand.push(key);
    this.demand.shift();
    const list = this.idle.get(key) ?? [];
    let cell: Cell | undefined;
    while ((cell = list.shift()) !== undefined) {
      if (cell.runningAgent) break;
      void this.discard(cell); // its agent died while waiting
    }
    if (cell) this.hits++;
    else this.misses++;
    this.refillTimer ??= setTimeout(() => {
      this.refillTimer = undefined;
      this.refill();
    }, REFILL_DELAY_MS);
    return cell;
  }

  stats(): PoolStats {
    return { size: this.size, idle: this.idleCount(), hits: this.hits, misses: this.misses };
  }

  /** Starts refilling unless a refill is already running (it re-reads the demand after every cell). */
  refill(): void {
    if (this.size === 0 || this.closed) return;
    this.filling ??= this.fill().finally(() => {
      this.filling = undefined;
    });
  }

  /** Resolves once no refill is pending or running (the pool is full, or a start failed and it waits for the next create). */
  async settled(): Promise<void> {
    while (this.filling || this.refillTimer) {
      if (this.refillTimer) {
        clearTimeout(this.refillTimer);
        this.refillTimer = undefined;
        this.refill();
      }
      await this.filling;
    }
  }

  /** Stops refilling and destroys every waiting cell. */
  async drain(): Promise<void> {
    this.closed = true;
    clearTimeout(this.refillTimer);
    this.refillTimer = undefined;
    await this.settled();
    const cells = [...this.idle.values()].flat();
    this.idle.clear();
    await Promise.allSettled(cells.map((c) => this.discard(c)));
  }

  private idleCount(): number {
    let n = 0;
    for (const list of this.idle.values()) n += list.length;
    return n;
  }

  private targets(): Map<string, number> {
    const t = new Map<string, number>();
    for (const k of this.demand) t.set(k, (t.get(k) ?? 0) + 1);
    return t;
  }

  /** The kind of cell most short of its share of the demand, if any. */
  private nextKey(): string | undefined {
    let best: string | undefined;
    let bestDeficit = 0;
    for (const [key, target] of this.targets()) {
      const deficit = target - (this.idle.get(key)?.length ?? 0);
      if (deficit > bestDeficit) {
        best = key;
        bestDeficit = deficit;
      }
    }
    return best;
  }

  /** The oldest waiting cell of a kind that holds more than its share of the demand. */
  private takeSurplus(): Cell | undefined {
    const targets = this.targets();
    for (const [key, list] of this.idle) if (list.length > (targets.get(key) ?? 0)) return list.shift();
    return undefined;
  }

  private async fill(): Promise<void> {
    while (!this.closed) {
      const key = this.nextKey();
      if (key === undefined) return;
      if (this.idleCount() >= this.size) {
        const surplus = this.takeSurplus();
        if (!surplus) return;
        await this.discard(surplus);
      }
      let cell: Cell | undefined;
      try {
        cell = await this.prepare(this.pathsOf.get(key) ?? []);
        await cell.agent();
      } catch (e) {
        if (cell) await this.discard(cell);
        // Tried again at the next create; the cold path reports the error to its caller.
        const message = `harnessrl sandbox (bwrap): cannot pre-start a pooled sandbox: ${errorMessage(e)}`;
        if (!this.warned.has(message)) console.warn(message);
        this.warned.add(message);
        return;
      }
      if (this.closed) {
        await this.discard(cell);
        return;
      }
      this.idle.set(key, [...(this.idle.get(key) ?? []), cell]);
    }
  }
}
