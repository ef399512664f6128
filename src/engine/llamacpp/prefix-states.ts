import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Long prompt prefixes evaluated once and shared by every sequence of one loaded policy: llama.cpp's automatic prefix
 * caching, done with node-llama-cpp's per-sequence state files (save 14 ms / load 12 ms for a 19k-token qwen3-tiny
 * prefix; the loaded KV is bit-identical to evaluating it, measured in test/engine/llamacpp-shared-prefix.test.ts).
 *
 * Why: a GRPO group's sessions start with the same prompt, and a harness's first prompt is mostly its system prompt
 * and tool schemas (Claude Code: ~18.5k of its ~19k Qwen3 tokens are the same for every task). Each sequence keeps
 * its own KV cache, so without this every one of N concurrent sessions evaluates that prompt itself: N × 20 s on a
 * core for Claude Code. The first request to evaluate a long new prefix publishes it here; requests arriving while it
 * is being evaluated wait for it instead of evaluating the same tokens on another core.
 *
 * Entries belong to one policy version (a new version is a new PolicySlot with its own PrefixStates). Files live in a
 * private temporary directory, removed when the slot is disposed or the process exits.
 */
export interface PrefixStatesOptions {
  /** Only prefixes that save at least this many tokens of evaluation are shared. */
  minTokens: number;
  /** Cap on the state files kept (least recently used are deleted first). */
  maxBytes: number;
}

interface Entry {
  readonly tokens: readonly number[];
  readonly file: string;
  /** Resolves true once the file is written, false if its owner failed (waiters then evaluate themselves). */
  readonly ready: Promise<boolean>;
  published: boolean;
  bytes: number;
  /** Requests that will load the file: it is not deleted while any remain. */
  users: number;
  lastUsed: number;
}

/** A claim on an entry: load its file once `ready` is true, then `release`. */
export interface PrefixClaim {
  readonly file: string;
  /** Leading tokens the claimant's prompt shares with the entry. */
  readonly shared: number;
  readonly ready: Promise<boolean>;
  release(): void;
}

/** The owner's side of an entry being evaluated: write the state to `file`, then `publish`, or `abandon` on failure. */
export interface PendingPrefix {
  readonly file: string;
  publish(bytes: number): void;
  abandon(): void;
}

const liveDirs = new Set<string>();
let exitHook = false;

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

export class PrefixStates {
  private readonly entries: Entry[] = [];
  private dir: string | undefined;
  private files = 0;
  private clock = 0;
  /** Learnt from the first file written: refuses prefixes whose state could not be kept anyway. */
  private bytesPerToken: number | undefined;
  private disposed = false;

  constructor(readonly options: PrefixStatesOptions) {}

  /**
   * The entry (published or still being evaluated) sharing the most leading tokens with `prompt`, if that is at least
   * `minTokens` more than the `have` tokens the caller's sequence already holds. The prompt's last token is never
   * counted: it is evaluated to sample the first new token.
   */
  claim(prompt: readonly number[], have: number): PrefixClaim | undefined {
    let best: Entry | undefined;
    let bestShared = 0;
    for (const e of this.entries) {
      const shared = Math.min(commonPrefix(e.tokens, prompt), prompt.length - 1);
      if (shared > bestShared) {
        best = e;
        bestShared = shared;
      }
    }
    if (!best || bestShared - have < this.options.minTokens) return undefined;
    const entry = best;
    entry.users++;
    entry.lastUsed = ++this.clock;
    let released = false;
    return {
      file: entry.file,
      shared: bestShared,
      ready: entry.ready,
      release: () => {
        if (released) return;
        released = true;
        entry.users--;
        this.evict();
      },
    };
  }

  /**
   * Registers `tokens` (a prompt without its last token) as being evaluated by the caller, unless it is too short to be
   * worth sharing, an entry already covers it, or its state would exceed the cap.
   */
  begin(tokens: readonly number[], have: number): PendingPrefix | undefined {
    if (this.disposed || tokens.length - have < this.options.minTokens) return undefined;
    if (this.bytesPerToken !== undefined && this.bytesPerToken * tokens.length > this.options.maxBytes) return undefined;
    if (this.entries.some((e) => commonPrefix(e.tokens, tokens) === tokens.length)) return undefined;
    this.dir ??= this.makeDir();
    const file = join(this.dir, `prefix-${++this.files}.bin`);
    let settle: (ok: boolean) => void = () => undefined;
    const ready = new Promise<boolean>((resolve) => (settle = resolve));
    const entry: Entry = { tokens: [...tokens], file, ready, published: false, bytes: 0, users: 0, lastUsed: ++this.clock };
    this.entries.push(entry);
    return {
      file,
      publish: (bytes: number) => {
        entry.published = true;
        entry.bytes = bytes;
        this.bytesPerToken ??= bytes / Math.max(1, tokens.length);
        settle(true);
        this.evict();
      },
      abandon: () => {
        this.remove(entry);
        settle(false);
      },
    };
  }

  /** Bytes of state files kept now. */
  get bytes(): number {
    return this.entries.reduce((s, e) => s + e.bytes, 0);
  }

  /** Entries kept now (published or being evaluated). */
  get size(): number {
    return this.entries.length;
  }

  /** Deletes every file; later `begin` calls share nothing. */
  dispose(): void {
    this.disposed = true;
    this.entries.length = 0;
    if (this.dir) {
      rmSync(this.dir, { recursive: true, force: true });
      liveDirs.delete(this.dir);
    }
  }

  /** Least recently used published entries without users go first, until the files fit the cap. */
  private evict(): void {
    let total = this.bytes;
    if (total <= this.options.maxBytes) return;
    const idle = this.entries.filter((e) => e.published && e.users === 0).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const e of idle) {
      if (total <= this.options.maxBytes) break;
      total -= e.bytes;
      this.remove(e);
    }
  }

  private remove(e: Entry): void {
    const i = this.entries.indexOf(e);
    if (i >= 0) this.entries.splice(i, 1);
    rmSync(e.file, { force: true });
  }

  private makeDir(): string {
    const dir = mkdtempSync(join(tmpdir(), "harnessrl-kv-"));
    liveDirs.add(dir);
    if (!exitHook) {
      exitHook = true;
      // A process that exits without disposing its engine still leaves no KV files behind.
      process.once("exit", () => {
        for (const d of liveDirs) rmSync(d, { recursive: true, force: true });
      });
    }
    return dir;
  }
}
