/**
 * Fills every registry with harnessrl's built-in implementations, explicitly and in one place. Nothing registers itself
 * on import, so a process can use exactly what its entry point registered: the CLI, the bench mains, the vitest setup
 * and library users call `registerBuiltins()` once before creating engines, stores, sandboxes, trainers, schedulers,
 * harnesses or task suites. Top layer: it imports every kind's adapters.
 */
import { llamacppEngineAdapter } from "./engine/llamacpp/register.js";
import { oracleEngineAdapter } from "./rollout/oracle/register.js";
import { registerEngine } from "./engine/registry.js";
import { sglangEngineAdapter, vllmEngineAdapter } from "./engine/remote/register.js";
import { scriptedEngineAdapter } from "./engine/scripted/register.js";
import { servedEngineAdapter } from "./engine/service/register.js";
import { builtinHarnesses } from "./harness/builtin/definitions.js";
import { realHarnesses } from "./harness/real/index.js";
import { registerHarness } from "./harness/registry.js";
import { builtinSandboxBackends } from "./sandbox/builtin.js";
import { registerSandboxBackend } from "./sandbox/registry.js";
import { builtinSchedulers } from "./schedule/builtin.js";
import { registerScheduler } from "./schedule/registry.js";
import { builtinStores } from "./store/builtin.js";
import { registerStore } from "./store/registry.js";
import { builtinSuites, builtinTaskFamilies } from "./tasks/builtin.js";
import { registerSuite, registerTaskFamily } from "./tasks/registry.js";
import { torchTrainerAdapter } from "./trainer/torch/register.js";
import { registerTrainer } from "./trainer/registry.js";

let registered = false;

/** Registers every built-in; calling it again does nothing (entry points and test setup may both call it). */
export function registerBuiltins(): void {
  if (registered) return;
  registered = true;
  for (const adapter of [scriptedEngineAdapter, llamacppEngineAdapter, vllmEngineAdapter, sglangEngineAdapter, servedEngineAdapter, oracleEngineAdapter]) registerEngine(adapter);
  for (const adapter of builtinStores) registerStore(adapter);
  for (const adapter of builtinSandboxBackends) registerSandboxBackend(adapter);
  registerTrainer(torchTrainerAdapter);
  for (const adapter of builtinSchedulers) registerScheduler(adapter);
  for (const def of [...builtinHarnesses, ...realHarnesses]) registerHarness(def);
  for (const family of builtinTaskFamilies) registerTaskFamily(family);
  for (const suite of builtinSuites) registerSuite(suite);
}
