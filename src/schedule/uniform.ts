import { z } from "zod";
import { BaseScheduler, parseOwnState } from "./base.js";
import { SeededStream, sampleIndex } from "./rng.js";

const stateSchema = z.looseObject({ rng: z.number().int().min(0).max(0xffffffff) });

/** Picks each step's harness uniformly at random from a seeded stream (deterministic for a seed). */
export class UniformScheduler extends BaseScheduler {
  readonly name = "uniform";
  private readonly rng: SeededStream;

  constructor(harnesses: readonly string[], seed: number) {
    super(harnesses);
    this.rng = new SeededStream(seed);
  }

  protected choose(): { index: number; probabilities: number[] } {
    const probabilities = this.harnesses.map(() => 1 / this.harnesses.length);
    return { index: sampleIndex(probabilities, this.rng.next()), probabilities };
  }

  protected observe(): void {}

  protected ownState(): Record<string, unknown> {
    return { rng: this.rng.state };
  }

  protected restoreOwn(state: Record<string, unknown>): void {
    this.rng.state = parseOwnState(stateSchema, state, this.name).rng;
  }

  protected ownLog(): void {}
}
