import { z } from "zod";
import { BaseScheduler, parseOwnState } from "./base.js";

const stateSchema = z.looseObject({ cursor: z.number().int().min(0) });

/** Cycles through the harnesses in config order; the cursor advances per `next`, so repeated asks keep cycling. */
export class RoundRobinScheduler extends BaseScheduler {
  readonly name = "round-robin";
  private cursor = 0;

  protected choose(): { index: number; probabilities: number[] } {
    const index = this.cursor % this.harnesses.length;
    this.cursor = (this.cursor + 1) % this.harnesses.length;
    return { index, probabilities: this.harnesses.map((_, i) => (i === index ? 1 : 0)) };
  }

  protected observe(): void {}

  protected ownState(): Record<string, unknown> {
    return { cursor: this.cursor };
  }

  protected restoreOwn(state: Record<string, unknown>): void {
    this.cursor = parseOwnState(stateSchema, state, this.name).cursor % this.harnesses.length;
  }

  protected ownLog(): void {}
}
