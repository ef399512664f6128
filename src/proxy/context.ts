import type { SamplingEngine, SamplingParams } from "../engine/types.js";
import type { HistoryPlanner } from "../history/types.js";
import type { CallRecord } from "../icr/records.js";
import type { Store } from "../store/types.js";
import type { BodyBudget } from "./http/body.js";
import type { ModelCatalog } from "./models.js";
import type { SessionRegistry } from "./sessions.js";

/** Everything a request handler needs; built once per server. */
export interface ProxyContext {
  engine: SamplingEngine;
  store: Store;
  planner: HistoryPlanner;
  sessions: SessionRegistry;
  models: ModelCatalog;
  /** The run's sampling config: overrides what harnesses ask for (max tokens is also capped by the request). */
  sampling: SamplingParams;
  maxBodyBytes: number;
  /** Body bytes buffered by all requests being read, bounded together. */
  bodyBudget: BodyBudget;
  /** Refuse requests offering tools the policy cannot serve, instead of leaving them out. */
  strictTools: boolean;
  /** Omitted tool kinds already reported in the log (each is said once per proxy). */
  reportedOmissions: Set<string>;
  /** Unexpected failures (bugs, engine crashes) are reported here; expected 4xx are not. */
  onError(error: unknown): void;
  onWarning(message: string): void;
  /** Called after each record is durable (before the answer completes); must be cheap and not throw. */
  onRecord: ((record: CallRecord) => void) | null;
}
