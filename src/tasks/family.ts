import type { Split, Task } from "./task.js";
import { InfraError } from "../core/errors.js";

/** The file answer-style tasks ask the agent to write its final answer into. */
export const ANSWER_FILE = "answer.txt";

/**
 * A built-in task family: generates task `index` of a split from a seed. A task depends only on (split, seed, index),
 * so `n=200` extends `n=100` and a task can be regenerated from its id alone.
 */
export interface TaskFamily {
  name: string;
  summary: string;
  /** Template ids per split; train and test share none. */
  templates: Record<Split, readonly string[]>;
  generate(split: Split, seed: number, index: number): Task;
}

export function taskId(family: string, split: Split, seed: number, index: number): string {
  return `${family}-${split}-s${seed}-${String(index).padStart(4, "0")}`;
}

/** Fills `{name}` slots of a template. Throws on a missing slot: a generator bug, not user input. */
export function fill(template: string, slots: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, k: string) => {
    const v = slots[k];
    if (v === undefined) throw new InfraError("internal", `template slot {${k}} not provided`);
    return v;
  });
}
