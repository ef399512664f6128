import { UserError, type ErrorCode } from "./errors.js";

/** What every registry entry carries: the name specs refer to, and the one line `harnessrl list` shows. */
export interface Registrable {
  readonly name: string;
  readonly summary: string;
}

/**
 * The named implementations of one kind (engines, stores, sandbox backends, trainers, schedulers, harnesses, task
 * suites). Registries start empty and are filled explicitly (src/builtins.ts `registerBuiltins()` for the built-in
 * ones, library users for their own), never by importing a module for its side effects: what a process can use must not
 * depend on which modules happened to be loaded first.
 */
export class Registry<T extends Registrable> {
  private readonly entries = new Map<string, T>();

  /**
   * @param kind what one entry is, for messages ("engine", "sandbox backend")
   * @param unknownCode the error code of a lookup that finds nothing (`unknown_engine`, …)
   */
  constructor(
    readonly kind: string,
    private readonly unknownCode: ErrorCode<"user">,
  ) {}

  /** Adds an entry; a second entry under the same name is a mistake (it would silently shadow the first). */
  register(entry: T): void {
    checkName(this.kind, entry.name);
    if (this.entries.has(entry.name)) {
      throw new UserError("duplicate_registration", `${this.kind} "${entry.name}" is already registered; pick another name`, { details: { kind: this.kind, name: entry.name } });
    }
    this.entries.set(entry.name, entry);
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  /** The entry, or undefined (for callers with a fallback, e.g. a bare store path). */
  find(name: string): T | undefined {
    return this.entries.get(name);
  }

  /** The entry; an unknown name is the caller's error, listing what is known. `context` says where the name came from. */
  get(name: string, context?: string): T {
    const entry = this.entries.get(name);
    if (entry) return entry;
    throw new UserError(this.unknownCode, `unknown ${this.kind} "${name}"${context ? ` in ${context}` : ""} (${this.knownText()})`, { details: { kind: this.kind, name } });
  }

  /** "known: a, b, c", or a hint when nothing is registered (the usual cause: registerBuiltins() was never called). */
  knownText(): string {
    if (this.entries.size === 0) return `no ${this.kind} is registered: call registerBuiltins() from harnessrl's builtins module first`;
    return `known: ${this.names().join(", ")}`;
  }

  /** Names, sorted. */
  names(): string[] {
    return [...this.entries.keys()].sort();
  }

  /** Entries in registration order. */
  values(): T[] {
    return [...this.entries.values()];
  }

  /** Name and summary of every entry, in registration order (what `harnessrl list` prints). */
  list(): { name: string; summary: string }[] {
    return this.values().map((e) => ({ name: e.name, summary: e.summary }));
  }
}

function checkName(kind: string, name: string): void {
  // A colon would make `name:arg` specs ambiguous; whitespace cannot be typed on a command line unquoted.
  if (name === "" || /[:\s?]/.test(name)) {
    throw new UserError("invalid_registration", `cannot register ${kind} "${name}": names are non-empty and contain no colon, question mark or whitespace`);
  }
}

/** A spec string split once: `scheme` before the first colon, `arg` after it (empty when there is no colon). */
export interface Spec {
  scheme: string;
  arg: string;
}

/**
 * Splits `scheme` or `scheme:arg` at the first colon only, so the arg keeps its own colons (`vllm:http://host:8000`,
 * `torch:cuda:1`, `dir:/data/suite:test`). Every spec string in harnessrl is split here.
 */
export function parseSpec(spec: string): Spec {
  const trimmed = spec.trim();
  const i = trimmed.indexOf(":");
  return i < 0 ? { scheme: trimmed, arg: "" } : { scheme: trimmed.slice(0, i), arg: trimmed.slice(i + 1) };
}
