// Public surface of the token-exact history planner.
export type { HistoryPlanner, PromptPlan } from "./types.js";
export { createHistoryPlanner, TokenExactPlanner } from "./planner.js";
export type { HistoryPlannerOptions } from "./planner.js";
