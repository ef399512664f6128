import { ERROR_CODES, codeInfo, type ErrorCode, type Fault } from "./error-codes.js";

export { ERROR_CODES, codeInfo, isErrorCode, type CodeInfo, type ErrorCode, type Fault } from "./error-codes.js";

/**
 * One error hierarchy for all of harnessrl, split by who is at fault. Each error has a stable machine-readable `code`
 * from the catalogue (error-codes.ts; each class takes only its fault's codes) and says whether retrying the same
 * operation can succeed. Protocol boundaries (the proxy, the CLI) translate these into their own shapes in exactly
 * one place each.
 */
export interface ErrorOptions {
  /** Whether the same operation may succeed if retried unchanged (default: the catalogue's). */
  retryable?: boolean;
  /** Structured context for logs and records (never secrets). */
  details?: Record<string, unknown>;
  cause?: unknown;
}

export abstract class HarnessRLError extends Error {
  readonly fault: Fault;
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly details: Record<string, unknown> | undefined;

  protected constructor(fault: Fault, code: ErrorCode, message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.fault = fault;
    this.code = code;
    this.retryable = options.retryable ?? (ERROR_CODES[fault] as Record<string, { retryable: boolean }>)[code]?.retryable ?? false;
    this.details = options.details;
  }

  toJSON(): Record<string, unknown> {
    return { name: this.name, fault: this.fault, code: this.code, message: this.message, retryable: this.retryable, details: this.details };
  }
}

/** The caller (user, config, API request, task file) is wrong. Never retryable as-is. */
export class UserError extends HarnessRLError {
  declare readonly fault: "user";
  declare readonly code: ErrorCode<"user">;
  constructor(code: ErrorCode<"user">, message: string, options?: ErrorOptions) {
    super("user", code, message, options);
  }
}

/** The harness misbehaved (crashed, spoke the protocol wrongly, broke its sandbox contract, failed to install). */
export class HarnessError extends HarnessRLError {
  declare readonly fault: "harness";
  declare readonly code: ErrorCode<"harness">;
  constructor(code: ErrorCode<"harness">, message: string, options?: ErrorOptions) {
    super("harness", code, message, options);
  }
}

/** The inference or training engine failed or is overloaded. Often retryable. */
export class EngineError extends HarnessRLError {
  declare readonly fault: "engine";
  declare readonly code: ErrorCode<"engine">;
  constructor(code: ErrorCode<"engine">, message: string, options?: ErrorOptions) {
    super("engine", code, message, options);
  }
}

/** Our own infrastructure (sandbox, store, filesystem, worker process) failed, or harnessrl has a bug (`internal`). */
export class InfraError extends HarnessRLError {
  declare readonly fault: "infra";
  declare readonly code: ErrorCode<"infra">;
  constructor(code: ErrorCode<"infra">, message: string, options?: ErrorOptions) {
    super("infra", code, message, options);
  }
}

/** The error of the class a code's fault names: for codes that arrive at run time (the trainer worker's). */
export function errorOfCode(code: ErrorCode, message: string, options?: ErrorOptions): HarnessRLError {
  const info = codeInfo(code);
  switch (info?.fault) {
    case "user":
      return new UserError(code as ErrorCode<"user">, message, options);
    case "harness":
      return new HarnessError(code as ErrorCode<"harness">, message, options);
    case "engine":
      return new EngineError(code as ErrorCode<"engine">, message, options);
    default:
      return new InfraError(info ? (code as ErrorCode<"infra">) : "internal", message, options);
  }
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
