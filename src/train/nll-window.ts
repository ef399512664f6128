/**
 * The warm start's stopping rule for `warm_start.stop_at_nll`: the mean NLL over the last epoch's worth of optimizer
 * steps. One step's NLL covers one packed row and swings with that row's demonstrations; an epoch's mean sees every
 * demonstration once. Checked only once a full epoch has run, so an early lucky row cannot stop SFT.
 */
export class NllWindow {
  private readonly values: number[] = [];

  constructor(private readonly steps: number) {}

  /** Adds one step's NLL and returns the mean over the window. */
  push(nll: number): number {
    this.values.push(nll);
    if (this.values.length > this.steps) this.values.shift();
    return this.mean();
  }

  mean(): number {
    return this.values.length === 0 ? Number.NaN : this.values.reduce((a, b) => a + b, 0) / this.values.length;
  }

  /** Whether SFT should stop at `target`: the window is full and its mean is at or below the target. */
  reached(target: number | undefined): boolean {
    return target !== undefined && this.values.length >= this.steps && this.mean() <= target;
  }

  get size(): number {
    return this.values.length;
  }
}
