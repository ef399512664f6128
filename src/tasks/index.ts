/** Public surface of the task layer: formats, suites, built-in families, and local (unsandboxed) helpers. */
export * from "./task.js";
export * from "./verifier-result.js";
export * from "./suite-spec.js";
export * from "./registry.js";
export { loadSuiteDir } from "./load.js";
export { writeNativeSuite } from "./layout-native.js";
export { seedWorkspace, installVerifier, writeFileMap, workspaceSeedOf, verifierFilesOf } from "./materialize.js";
export { verifyLocally, applyStepsLocally, runProcess, type StepOutcome, type ProcessResult } from "./local-run.js";
export { checkTasks, type TaskCheck } from "./check.js";
export { stepAsShellCommand, shellQuote } from "./shell.js";
export { ANSWER_FILE, type TaskFamily } from "./family.js";
