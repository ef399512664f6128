/**
 * The catalogue of every error code harnessrl throws, grouped by who is at fault. One code per failure, spelled by one
 * scheme: `invalid_<thing>` for malformed input, `<thing>_not_found` / `unknown_<kind>` for a missing name,
 * `unsupported_<thing>` for valid input we cannot handle, `<component>_<event>` for runtime failures. A code belongs
 * to exactly one fault, and the error classes in errors.ts accept only the codes of theirs. docs/errors.md is
 * generated from this table (test/core/error-catalogue.test.ts fails when it is stale).
 */
export type Fault = "user" | "harness" | "engine" | "infra";

export interface CodeInfo {
  /** One line: what failed. */
  readonly meaning: string;
  /** Whether the same operation may succeed if retried unchanged, unless the thrower says otherwise. */
  readonly retryable: boolean;
}

const once = (meaning: string): CodeInfo => ({ meaning, retryable: false });
const retry = (meaning: string): CodeInfo => ({ meaning, retryable: true });

export const ERROR_CODES = {
  user: {
    invalid_arguments: once("a command-line flag or argument is missing or malformed"),
    invalid_config: once("a run, batch, advantage or scheduler config does not validate"),
    config_not_found: once("the config file cannot be read"),
    invalid_engine_spec: once("an engine spec (`scheme:arg?options`) is malformed"),
    invalid_store_spec: once("a store spec is malformed"),
    invalid_suite_spec: once("a task suite spec is malformed"),
    invalid_sandbox_options: once("sandbox or sandbox backend options do not validate"),
    invalid_sandbox_path: once("a sandbox path is empty, absolute or leaves the sandbox root"),
    invalid_command_harness: once("a `command:` harness spec or its JSON config is malformed"),
    invalid_scripted_module: once("a scripted engine module is missing, does not load or has no default function"),
    invalid_model_dir: once("a model directory lacks a required file or one of its files cannot be read"),
    invalid_model_config: once("a model's config.json does not validate or does not fit the checkpoint"),
    invalid_tokenizer: once("tokenizer.json (vocabulary, merges, special tokens, regex) is malformed"),
    invalid_chat_template: once("a chat template does not parse or its end of turn cannot be told"),
    invalid_safetensors: once("a safetensors file or index is truncated or malformed"),
    invalid_tensor: once("a tensor's shape does not match its data or what the model needs"),
    invalid_token: once("a prompt token id is not in the vocabulary"),
    invalid_sampling_params: once("temperature or max tokens out of range"),
    invalid_batch: once("a training batch row lacks a field or its arrays disagree in length"),
    invalid_batch_options: once("batch building options out of range"),
    invalid_values: once("critic values are missing or do not match the batch"),
    invalid_observation: once("a scheduler observation (learnability, gradient sketch) is malformed"),
    invalid_scheduler_state: once("a saved scheduler state is malformed or belongs to another scheduler"),
    invalid_step: once("a scheduler step number is not a non-negative integer"),
    invalid_seed: once("a seed is not a non-negative integer"),
    invalid_lr: once("a learning rate is not a non-negative number"),
    invalid_task: once("a task folder or task file is malformed"),
    invalid_clawgym_task: once("a ClawGym-Bench task folder (data_entry.json, input_files/, reward/reward.sh) is malformed"),
    unknown_engine: once("no engine is registered under that scheme"),
    unknown_harness: once("no harness is registered under that name"),
    unknown_preset: once("no model preset has that name"),
    unknown_sandbox_backend: once("no sandbox backend is registered under that name"),
    unknown_scheduler: once("no scheduler is registered under that name"),
    unknown_store: once("no store is registered under that scheme"),
    unknown_suite: once("no task suite is registered under that name"),
    unknown_trainer: once("no trainer is registered under that name"),
    unknown_call: once("a call id is not in the session it was looked up in"),
    unknown_task_family: once("no task family is registered under that name"),
    duplicate_registration: once("a registry already holds an entry of that name"),
    invalid_registration: once("a registry entry's name is empty or contains `:`, `?` or whitespace"),
    codec_mismatch: once("the engine's tokenizer is not the policy's (rollouts would record other token ids than the trainer trains on)"),
    unsupported_trainer_capability: once("the config asks for a trainer capability (critic, capo, grad_sketch, lora) the trainer backend lacks"),
    record_without_spans: once("a call record from ICR schema 1 has no completion spans: re-record it"),
    not_found: once("a route, session or recorded call does not exist (HTTP 404)"),
    model_not_found: once("the request names a model the proxy does not serve (HTTP 404)"),
    model_dir_not_found: once("a model directory does not exist"),
    model_dir_exists: once("the output directory already holds a model (pass --force)"),
    weights_not_found: once("a model directory has neither model.safetensors nor an index"),
    tensor_not_found: once("the weights lack a tensor the model needs"),
    run_dir_not_found: once("a run directory does not exist"),
    store_not_found: once("no call record store at the given path"),
    suite_not_found: once("a task suite folder does not exist"),
    suite_empty: once("a task suite folder holds no tasks"),
    sandbox_seed_not_found: once("a workspace seed directory does not exist"),
    command_harness_path_not_found: once("host paths a command harness mounts do not exist"),
    command_harness_unset: once("the command harness's command line variable is not set"),
    unsupported_dtype: once("a tensor dtype we cannot convert"),
    unsupported_model: once("a model architecture the exporter or engine cannot handle"),
    unsupported_tokenizer: once("a tokenizer kind we do not implement (only byte-level BPE)"),
    unsupported_weight_reload: once("the engine cannot load new policy weights between steps"),
    chat_template_rejected: once("the chat template raised an error or did not close the assistant turn"),
    context_length_exceeded: once("the prompt does not fit the model's context window"),
    empty_prompt: once("a generation request has no prompt tokens"),
    incompatible_policy: once("a policy does not fit the running engine (e.g. another vocabulary size)"),
    oracle_needs_rollouts: once("the oracle engine was used outside a rollout"),
    sandbox_destroyed: once("a sandbox was used after (or while) being destroyed"),
    sandbox_path_escape: once("a sandbox path resolves outside its root"),
    sandbox_not_a_directory: once("a sandbox path expected to be a directory is not"),
    task_path_escape: once("a task file path escapes the task folder"),
    store_open_failed: once("the SQLite store file cannot be opened"),
    store_closed: once("the store was used after close"),
    store_duplicate: once("a record with that id is already stored"),
    store_not_harnessrl: once("the database is not a harnessrl call record store"),
    store_schema_old: once("a read-only store needs migrating first"),
    store_schema_too_new: once("the store was written by a newer harnessrl"),
    store_auth_failed: once("the Postgres store refused the spec's user or password"),
    invalid_rollout_bundle: once("a rollout bundle a node shipped does not validate (shape, ids, references outside its rollout)"),
    unauthorized: once("a missing or wrong API key (HTTP 401)"),
    method_not_allowed: once("an HTTP method the route does not accept (HTTP 405)"),
    payload_too_large: once("a request body over the size limit (HTTP 413)"),
    not_listening: once("the proxy's address was asked for before it listens"),
    listen_failed: once("the proxy or the dashboard cannot listen on the given host and port (in use, not permitted, unknown host)"),
    dashboard_token_required: once("the dashboard is asked to listen beyond loopback without a --token"),
    invalid_dashboard_token: once("the dashboard token is too short to guess-proof the server"),
    invalid_cluster_job: once("a rollout job taken from the cluster queue does not validate (nodes never trust payloads)"),
    invalid_cluster_url: once("a cluster (Redis) URL is malformed"),
    unsupported_cluster_run: once("a run config's cluster: section asks for something the cluster cannot run yet"),
  },
  harness: {
    invalid_json: once("the harness sent a request body that is not JSON"),
    json_too_deep: once("a request body or tool-call arguments nest arrays/objects deeper than the proxy accepts (HTTP 400)"),
    invalid_request: once("the harness sent a request that does not follow its protocol"),
    unsupported_content: once("the harness sent content a text-only policy cannot take (images, audio, item references)"),
    harness_install_failed: retry("installing the harness's pinned npm package failed"),
    harness_install_incomplete: once("the installed harness package lacks its native binary"),
    harness_unsettled: once("calls from the harness were still in flight long after it exited"),
    sandbox_disk_limit: once("the rollout's sandbox wrote past its disk budget (limits.diskBytes) and was killed: the policy's failure"),
    request_aborted: once("the harness broke off while sending the request body"),
    client_closed: once("the harness closed the connection before the answer was complete (recorded, not thrown)"),
  },
  engine: {
    engine_closed: once("the engine was used after close"),
    engine_overloaded: retry("the inference server answered 429"),
    engine_server_error: retry("the inference server answered 5xx"),
    engine_rejected: once("the inference server refused the request (4xx)"),
    engine_timeout: retry("the inference server did not answer in time"),
    engine_unreachable: retry("the inference server cannot be reached"),
    engine_stream_broken: once("the answer broke off after tokens were delivered"),
    invalid_engine_response: once("the engine's answer lacks token ids or logprobs, or is malformed"),
    weight_update_failed: once("the inference server did not take the new weights"),
    llamacpp_unavailable: once("the llama.cpp runtime (node-llama-cpp) cannot be loaded"),
    llamacpp_unsupported: once("the installed node-llama-cpp lacks what shared batching needs"),
    llamacpp_load_failed: once("llama.cpp cannot load the policy's GGUF file"),
    llamacpp_failed: once("llama.cpp generation failed"),
    scripted_failed: once("a scripted engine's function threw"),
    invalid_scripted_reply: once("a scripted engine's function returned an invalid turn"),
    oracle_no_rollout: once("the oracle engine got a session outside a rollout"),
    oracle_unknown_task: once("the oracle does not know the rollout's task"),
    oracle_no_solution: once("the task has no oracle steps"),
    oracle_unsupported_harness: once("the harness has no oracle profile"),
    // The trainer worker's own codes (worker/harnessrl_worker, docs/worker.md), as src/trainer maps them.
    invalid_trainer_request: once("the trainer worker refused a request's arguments, frames or batch (`bad_request`)"),
    unknown_op: once("the trainer worker does not know the operation"),
    no_model: once("the trainer worker has no model loaded"),
    no_critic: once("the trainer worker has no critic loaded"),
    no_capo_masks: once("the trainer worker has no CAPO partitions (send capo_probe first)"),
    non_finite_loss: once("a training step produced a non-finite loss; gradients were cleared"),
    out_of_memory: retry("the trainer worker ran out of accelerator memory"),
    trainer_internal: once("the trainer worker hit a bug (traceback on its stderr)"),
    trainer_rank_failed: once("a trainer rank died or failed where rank 0 did not; restart the trainer and load the last checkpoint (`rank_failed`)"),
    trainer_rank_mismatch: once("trainer ranks hold different weights after loading (machines see different files; `rank_mismatch`)"),
    trainer_failed: once("the trainer worker answered with an error code this client does not know"),
  },
  infra: {
    internal: once("a bug in harnessrl: an invariant broke or something unknown was thrown"),
    proxy_busy: retry("the proxy holds as many request-body bytes as it allows at once (HTTP 503/529)"),
    big_endian: once("the host is big-endian; the trainer wire needs little-endian"),
    worker_not_found: once("the trainer worker's Python package is missing"),
    worker_spawn_failed: once("the trainer worker process cannot be started"),
    worker_died: retry("the trainer worker process exited"),
    worker_timeout: once("the trainer worker did not answer in time"),
    worker_protocol: once("the trainer worker's reply does not follow the wire protocol"),
    sandbox_no_bwrap: once("bubblewrap is not installed"),
    sandbox_no_agent: once("the sandbox exec agent is not built"),
    sandbox_seccomp_arch: once("no sandbox seccomp filter exists for this machine's architecture"),
    sandbox_mount_root: once("the sandbox mount root cannot be used (not a directory of ours)"),
    sandbox_root_too_long: once("the sandbox mount root is too deep for a unix socket path"),
    sandbox_agent: retry("the sandbox exec agent did not start or died"),
    sandbox_bridge: retry("the sandbox bridge helper failed"),
    sandbox_cgroup: retry("the sandbox's cgroup cannot be set up or joined"),
    sandbox_spawn: retry("a sandboxed process cannot be started"),
    sandbox_cleanup: once("removing a sandbox left something behind"),
    store_init_failed: once("the SQLite store opened but cannot be initialised or migrated"),
    store_write_failed: once("writing to the store failed"),
    store_corrupt: once("stored data cannot be decoded"),
    store_unreachable: retry("the Postgres store cannot be reached or stopped answering; retry later (a bundle's ingest is idempotent)"),
    store_worker_not_built: once("the Postgres store's worker thread is not compiled (run npm run build)"),
    invalid_stored_token: once("a token id to store is not a 32-bit integer"),
    task_write_failed: retry("a task file cannot be written"),
    spawn_failed: once("a local process cannot be started"),
    empty_command: once("a local command line is empty"),
    npm_unavailable: once("npm cannot be run to install a harness"),
    install_lock_failed: once("a harness install lock cannot be created"),
    install_lock_timeout: retry("another process held a harness install lock too long"),
    harness_not_built: once("a built-in harness is not compiled (run npm run build)"),
    bench_check_failed: once("a benchmark's own sanity check failed"),
    redis_start_failed: once("a private redis-server (tests, benchmarks) did not start"),
    cluster_unreachable: retry("the cluster queue (Redis) cannot be reached"),
    cluster_store_not_found: once("a rollout node has no central store to ship to (neither --store nor the job names one)"),
    cluster_store_no_ingest: once("the central store named for a cluster cannot take shipped rollouts"),
    cluster_rollout_infra: retry("a rollout attempt on a node ended in an infra error; the queue retries the job"),
    cluster_rollout_wedged: retry("a rollout attempt on a node did not end within its budget (wedged sandbox host)"),
    cluster_node_draining: retry("a node stopped while it ran a rollout attempt; the attempt is handed back to the queue"),
    cluster_lock_lost: retry("a node lost a job's lock (cut off too long) and did not ship its attempt"),
  },
} as const satisfies Record<Fault, Record<string, CodeInfo>>;

/** The codes of one fault (`ErrorCode<"user">`), or of all faults. */
export type ErrorCode<F extends Fault = Fault> = F extends Fault ? keyof (typeof ERROR_CODES)[F] & string : never;

/** The catalogue entry of a code, with its fault; undefined for a string that is not a code. */
export function codeInfo(code: string): (CodeInfo & { fault: Fault; code: ErrorCode }) | undefined {
  for (const fault of Object.keys(ERROR_CODES) as Fault[]) {
    const table: Record<string, CodeInfo> = ERROR_CODES[fault];
    const info = Object.hasOwn(table, code) ? table[code] : undefined;
    if (info) return { ...info, fault, code: code as ErrorCode };
  }
  return undefined;
}

export function isErrorCode(code: string): code is ErrorCode {
  return codeInfo(code) !== undefined;
}
