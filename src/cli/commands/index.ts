import type { Command } from "../command.js";
import { doctorCommand } from "./doctor.js";
import { evalCommand } from "./eval.js";
import { listCommand } from "./list.js";
import { quickstartCommand } from "./quickstart.js";
import { rolloutCommand } from "./rollout.js";
import { trainCommand } from "./train.js";
import { exportCommand } from "./export.js";
import { modelCommand } from "./model.js";
import { proxyCommand } from "./proxy.js";
import { treesCommand } from "./trees.js";
import { tasksCommand } from "./tasks.js";
import { harnessCommand } from "./harness.js";
import { reportCommand } from "./report.js";
import { compareCommand } from "./compare.js";
import { dashboardCommand } from "./dashboard.js";
import { nodeCommand } from "./node.js";
import { serveCommand } from "./serve.js";

/** Every CLI subcommand, in the order `harnessrl --help` lists them. Add one import + one entry per command. */
export const commands: Command[] = [quickstartCommand, listCommand, proxyCommand, rolloutCommand, evalCommand, trainCommand, modelCommand, doctorCommand, treesCommand, exportCommand, tasksCommand, harnessCommand, reportCommand, compareCommand, dashboardCommand, nodeCommand, serveCommand];
