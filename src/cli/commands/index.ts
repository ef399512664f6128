import type { Command } from "../command.js";
import { modelCommand } from "./model.js";
import { proxyCommand } from "./proxy.js";

/** Every CLI subcommand, in the order `harnessrl --help` lists them. Add one import + one entry per command. */
export const commands: Command[] = [proxyCommand, modelCommand];
