#!/usr/bin/env node
import { registerBuiltins } from "../builtins.js";
import { isHarnessRLError, errorMessage } from "../core/errors.js";
import { joinNegativeValues, userErrorText } from "./args.js";
import { commands } from "./commands/index.js";

function help(): string {
  const width = Math.max(...commands.map((c) => c.name.length), 8);
  const lines = commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return ["harnessrl — RL training of LLM agents through their real harnesses", "", "Usage: harnessrl <command> [options]", "", "Commands:", ...lines, "", "Run `harnessrl <command> --help` for a command's options."].join("\n");
}

async function main(argv: string[]): Promise<number> {
  registerBuiltins();
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    console.log(help());
    return name ? 0 : 1;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    console.error(`harnessrl: unknown command "${name}"\n\n${help()}`);
    return 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    console.log(command.usage);
    return 0;
  }
  if (!command.handlesSignals) exitOnSignals(command.name);
  return command.run(rest);
}

/**
 * Ctrl-C / SIGTERM stop a long command (train, quickstart, rollout) now. Libraries add signal listeners of their own
 * (so Node's default "terminate" no longer applies); exiting runs the sandboxes' exit cleanups, and runs resume from
 * their last completed step.
 */
function exitOnSignals(name: string): void {
  const codes = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const;
  for (const sig of Object.keys(codes) as (keyof typeof codes)[]) {
    process.once(sig, () => {
      console.error(`harnessrl ${name}: ${sig}, stopping`);
      process.exit(codes[sig]);
    });
  }
}

/** Exits soon after the command is done, even if a library left a handle open (a failed setup must not hang). */
function exitSoon(code: number): void {
  process.exitCode = code;
  setTimeout(() => process.exit(code), 2_000).unref();
}

const args = joinNegativeValues(process.argv.slice(2));
main(args).then(exitSoon, (e: unknown) => {
  // User/config errors are expected: print the message only. Anything else is a bug: print the stack.
  if (isHarnessRLError(e) && e.fault === "user") console.error(userErrorText(e, args[0]));
  else console.error(e instanceof Error ? (e.stack ?? e.message) : errorMessage(e));
  exitSoon(isHarnessRLError(e) && e.fault === "user" ? 2 : 1);
});
