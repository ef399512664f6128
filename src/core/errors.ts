/**
 * One error hierarchy for all of harnessrl, split by who is at fault. Each error has a stable machine-readable `code`
 * and says whether retrying the same operation can succeed. Protocol boundaries (the proxy, the CLI) translate these
 * into their own shapes in exactly one place each.
 */
export type Fault = "user" | "harness" | "engine" | "infra";

export interface ErrorOptions {
  /** Whether the same operation may succeed if retried unchanged. */
  retryable?: boolean;
  /** Structured context for logs and records (never secrets). */
  details?: Record<string, unknown>;
  cause?: unknown;
}

export abstract class HarnessRLError extends Error {
  abstract readonly fault: Fault;
  readonly code: string;
  readonly retryable: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: string, message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.details = options.details;
  }

  toJSON(): Record<string, unknown> {
    return { name: this.name, fault: this.fault, code: this.code, message: this.message, retryable: this.retryable, details: this.details };
  }
}

/** The caller (user, config, API request, task file) is wrong. Never retryable as-is. */
export class UserError extends HarnessRLError {
  readonly fault = "user" as const;
}

/** The harness misbehaved (crashed, spoke the protocol wrongly, broke its sandbox contract). */
export class HarnessError extends HarnessRLError {
  readonly fault = "harness" as const;
}

/** The inference or training engine failed or is overloaded. Often retryable. */
export class EngineError extends HarnessRLError {
  readonly fault = "engine" as const;
}

/** Our own infrastructure (sandbox, store, filesystem, worker process) failed. */
export class InfraError extends HarnessRLError {
  readonly fault = "infra" as const;
}

export function isHarnessRLError(e: unknown): e is HarnessRLError {
  return e instanceof HarnessRLError;
}

/** Wraps anything thrown into a HarnessRLError; unknown throwables are infrastructure faults (our bug). */
export function toHarnessRLError(e: unknown): HarnessRLError {
  if (e instanceof HarnessRLError) return e;
  const message = e instanceof Error ? e.message : String(e);
  return new InfraError("internal", message, { cause: e });
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
