import { mulberry32 } from "../core/random.js";
import type { Task } from "../tasks/task.js";

/** A deterministic permutation (Fisher–Yates with the shared seeded PRNG): same seed, same order on every machine. */
function permutation(n: number, seed: number): number[] {
  const next = mulberry32(seed);
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

/**
 * Hands out training tasks in epochs of a seeded shuffle. The cursor is the only state, so a resumed run continues
 * with exactly the tasks it would have seen.
 */
export class TaskSampler {
  private cached: { epoch: number; order: number[] } | null = null;

  constructor(
    private readonly tasks: readonly Task[],
    private readonly seed: number,
  ) {}

  private order(epoch: number): number[] {
    if (this.cached?.epoch !== epoch) this.cached = { epoch, order: permutation(this.tasks.length, this.seed * 1_000_003 + epoch) };
    return this.cached.order;
  }

  take(cursor: number, count: number): { tasks: Task[]; cursor: number } {
    const n = this.tasks.length;
    const out: Task[] = [];
    for (let i = 0; i < count && n > 0; i++) {
      const pos = cursor + i;
      out.push(this.tasks[this.order(Math.floor(pos / n))[pos % n]!]!);
    }
    return { tasks: out, cursor: cursor + count };
  }
}
