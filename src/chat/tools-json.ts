import type { ToolSpec } from "./types.js";

/**
 * The JSON of a request's tool list, computed once per list object (real harnesses send 30k+ characters of tools with
 * every call: ~0.16 ms to serialise). Only for keys whose staleness cannot corrupt output: the history planner's
 * tools key (a splice is still checked against the fresh rendering). Normalised tool lists are never mutated.
 */
const byList = new WeakMap<readonly ToolSpec[], string>();

export function toolsJson(tools: readonly ToolSpec[]): string {
  let json = byList.get(tools);
  if (json === undefined) {
    json = JSON.stringify(tools);
    byList.set(tools, json);
  }
  return json;
}
