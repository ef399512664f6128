// Types of experiments/quickstart-seeds/load.mjs for the TypeScript tests.

export interface Load {
  /** Cores of load asked for. */
  cores: number;
  /** The busy processes (ceil(cores) of them). */
  pids: (number | undefined)[];
  /** Ends every busy process; resolves once all have exited. */
  stop(): Promise<void>;
}

export interface CpuTicks {
  total: number;
  idle: number;
}

export function startLoad(cores: number, options?: { maxSeconds?: number }): Load;
export function cpuTicks(path?: string): CpuTicks | null;
export function busyShare(a: CpuTicks | null, b: CpuTicks | null): number | null;
export function machineCores(): number;
