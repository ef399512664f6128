/**
 * Each real harness CLI's own shell tool and the argument that carries the command line (pinned versions). Scripted
 * models that drive a real harness (tests, `bench:trees-real`) call these to make the harness run a command.
 */
export const REAL_HARNESS_SHELL_TOOLS: Readonly<Record<string, { tool: string; arg: string }>> = {
  "claude-code": { tool: "Bash", arg: "command" },
  codex: { tool: "exec_command", arg: "cmd" },
  "qwen-code": { tool: "run_shell_command", arg: "command" },
  pi: { tool: "bash", arg: "command" },
  openclaw: { tool: "exec", arg: "command" },
};
