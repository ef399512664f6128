import { errorMessage } from "../core/errors.js";
import { formatEngineSpec, parseEngineSpec, type EngineSpec } from "../engine/spec.js";
import type { RunConfig } from "./config.js";

/**
 * The engine endpoints of a run that trains on a cluster: the servers rollout nodes sample from, each of which the
 * trainer makes serve a step's policy version before the step's jobs are added (docs/cluster.md, Training on a
 * cluster). `harnessrl serve` (`llamacpp-http:`) takes pushed weights and says which version answered each call;
 * vLLM and SGLang reload from a path their server reads (vLLM through a deployment hook), and a node's client of them
 * cannot observe which version served a call, so jobs name it.
 */

/** Engine kinds a cluster run can sample from on its nodes. */
const CLUSTER_ENGINE_KINDS: readonly string[] = ["llamacpp-http", "vllm", "sglang"];

/** vLLM / SGLang: the node's client stamps calls with the version its job names (exact in sync mode only). */
export function isVersionBlind(kind: string): boolean {
  return kind === "vllm" || kind === "sglang";
}

function hasLora(config: RunConfig): boolean {
  return "lora" in config.model && config.model.lora !== undefined;
}

/** Why the config's engine endpoints cannot train on a cluster, or null. */
export function clusterEndpointIssue(config: RunConfig): string | null {
  const c = config.cluster;
  if (!c) return null;
  const own = config.engine.kind;
  if (!CLUSTER_ENGINE_KINDS.includes(own)) {
    return `training on a cluster needs an engine the nodes reach and the trainer pushes each policy version to: engine.kind llamacpp-http (a \`harnessrl serve\`), vllm or sglang, not ${own}`;
  }
  if (isVersionBlind(own) && !c.engines) {
    return `engine.kind ${own} on a cluster: list the endpoints in cluster.engines as ${own}:<url>?model_dir=<the policy's tokenizer directory on every node> (the nodes render prompts and parse answers with it)`;
  }
  if (own === "vllm" && !hasLora(config) && !config.engine.reload_url) return "engine.kind vllm on a cluster: set engine.reload_url, the deployment hook that makes the server serve each new policy version";
  let blind = isVersionBlind(own);
  for (const [i, e] of (c.engines ?? []).entries()) {
    let spec: EngineSpec;
    try {
      spec = parseEngineSpec(e);
    } catch (err) {
      return `cluster.engines[${i}] is not an engine spec: ${errorMessage(err)}`;
    }
    if (!CLUSTER_ENGINE_KINDS.includes(spec.kind)) {
      return `cluster.engines[${i}] is ${spec.kind}; training on a cluster pushes each policy version to its endpoints, which must be llamacpp-http:<url> (harnessrl serve), vllm:<url> or sglang:<url>`;
    }
    if (!isVersionBlind(spec.kind)) continue;
    blind = true;
    if (spec.options.model_dir === undefined) return `cluster.engines[${i}] (${spec.kind}) needs model_dir=<the policy's tokenizer directory on every node>: nodes render prompts and parse answers with it`;
    if (spec.options.version !== undefined) return `cluster.engines[${i}] sets version=; each job names the version its step samples`;
    if (spec.kind === "vllm" && spec.target.replace(/\/+$/, "") !== (config.engine.url ?? "").replace(/\/+$/, "") && spec.options.reload_url === undefined && !hasLora(config)) {
      return `cluster.engines[${i}] (vllm) needs reload_url=<the deployment hook that makes it serve each new policy version>`;
    }
  }
  if (blind && hasLora(config)) return "LoRA policies on vllm/sglang endpoints cannot train on a cluster yet (nodes would have to name each version's adapter); use full weights or llamacpp-http endpoints";
  if (blind && config.mode === "async") {
    return "async mode on a cluster needs llamacpp-http endpoints: a node's vLLM/SGLang client cannot tell which policy version served a call while the trainer pushes the next one (calls carry their job's version, exact only in sync mode)";
  }
  return null;
}

/** The spec a job samples with: a version-blind endpoint's client stamps calls with the job's version. */
export function jobEngineSpec(endpoint: string, version: number): string {
  const spec = parseEngineSpec(endpoint);
  return isVersionBlind(spec.kind) ? formatEngineSpec({ ...spec, options: { ...spec.options, version } }) : endpoint;
}

/**
 * The trainer's own client of an endpoint: `harnessrl serve` is made to serve the run's current version on connect
 * (`sync`); a vLLM/SGLang client reads the policy's codec from `policyDir` (the endpoint's `model_dir` names a
 * directory on the nodes) and reloads the server from policy directories it is given (paths the server must read).
 */
export function trainerClientSpec(endpoint: string, policyDir: string): EngineSpec {
  const spec = parseEngineSpec(endpoint);
  if (!isVersionBlind(spec.kind)) return { ...spec, options: { ...spec.options, sync: 1 }, modelDir: policyDir };
  const { model_dir: _nodes, ...options } = spec.options;
  return { ...spec, options, modelDir: policyDir };
}

/** The run's own endpoint as a job spec (cluster.engines absent: only `harnessrl serve` gets here). */
export function ownEndpoint(config: RunConfig): string {
  return `${config.engine.kind}:${config.engine.url ?? ""}`;
}
