/** A CLI subcommand. Each lives in its own file under cli/commands and only wires library parts together. */
export interface Command {
  name: string;
  summary: string;
  /** Usage text shown by `harnessrl <name> --help`. */
  usage: string;
  run(argv: string[]): Promise<number>;
  /** The command installs its own SIGINT/SIGTERM handling (e.g. the proxy drains); otherwise main.ts exits on them. */
  handlesSignals?: boolean;
}
