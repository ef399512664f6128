import { parseArgs } from "node:util";
import { UserError, errorMessage } from "../../core/errors.js";
import { createEngine, parseEngineSpec } from "../../engine/index.js";
import type { SamplingParams } from "../../engine/types.js";
import { createHistoryPlanner } from "../../history/index.js";
import { ProxyServer, callLogLine } from "../../proxy/index.js";
import { policyOfEngine } from "../../run/policy.js";
import { openStore } from "../../store/registry.js";
import type { Command } from "../command.js";
import { untilStopped } from "../until-stopped.js";

const usage = `Usage:
  harnessrl proxy --engine <spec> [--port N] [--host H] [--db FILE] [--open] [--temperature T] [--max-tokens N]
                  [--model-alias a,b,…] [--strict-models] [--strict-tools] [--admin-token T] [--max-body-mb N]
                  [--model-dir DIR] [--verbose]

Serves the policy to agent harnesses on one port and records every model call token-exactly:
  OpenAI Chat Completions  POST /v1/chat/completions
  OpenAI Responses         POST /v1/responses
  Anthropic Messages       POST /v1/messages, POST /v1/messages/count_tokens
  Models                   GET  /v1/models
  Admin (admin token)      POST /admin/sessions, GET /admin/sessions/<id>, GET /admin/rollouts/<id>

Options:
  --engine <spec>      sampling engine, e.g. scripted:./agent.mjs or llamacpp:<model dir>
  --port N             port (default 8400; 0 picks a free one)
  --host H             interface (default 127.0.0.1)
  --db FILE            call record store: a .sqlite path, sqlite:<path> or memory (default harnessrl.sqlite)
  --open               accept any credential and use it as the session id (default: only issued credentials)
  --temperature T      sampling temperature used for every call, whatever the harness asks (default 1)
  --max-tokens N       cap on sampled tokens per call (default 512; smaller harness limits are honoured)
  --model-alias list   model names listed by /v1/models, comma-separated or repeated (any name is served anyway)
  --strict-models      answer 404 to model names other than the engine's and the aliases ("*" alias = any)
  --strict-tools       answer 400 to requests offering hosted tools (default: left out of the prompt, recorded)
  --admin-token T      admin API token (default: HARNESSRL_ADMIN_TOKEN or a random one, printed at start)
  --max-body-mb N      largest request body in MiB (default 64)
  --model-dir DIR      the policy's model directory (tokenizer + chat template for every engine, weights for engines
                       that take one)
  --verbose            print one line per recorded call (session, protocol, tokens, tool calls, break)`;

function number(name: string, v: string | undefined, check: (n: number) => boolean, what: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (v.trim() === "" || !Number.isFinite(n) || !check(n)) throw new UserError("invalid_arguments", `--${name} must be ${what}, got "${v}"`);
  return n;
}

async function run(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      options: {
        engine: { type: "string" },
        port: { type: "string" },
        host: { type: "string" },
        db: { type: "string" },
        open: { type: "boolean" },
        temperature: { type: "string" },
        "max-tokens": { type: "string" },
        "model-alias": { type: "string", multiple: true },
        "strict-models": { type: "boolean" },
        "strict-tools": { type: "boolean" },
        "admin-token": { type: "string" },
        "max-body-mb": { type: "string" },
        "model-dir": { type: "string" },
        verbose: { type: "boolean" },
      },
    }));
  } catch (e) {
    throw new UserError("invalid_arguments", `${errorMessage(e)}\n\n${usage}`);
  }
  if (!values.engine) throw new UserError("invalid_arguments", `proxy needs --engine <spec>\n\n${usage}`);
  const port = number("port", values.port, (n) => Number.isInteger(n) && n >= 0 && n < 65536, "a port number") ?? 8400;
  const temperature = number("temperature", values.temperature, (n) => n >= 0, "a number ≥ 0");
  const maxTokens = number("max-tokens", values["max-tokens"], (n) => Number.isInteger(n) && n > 0, "a positive integer");
  const maxBodyMb = number("max-body-mb", values["max-body-mb"], (n) => n > 0, "a positive number");
  const aliases = (values["model-alias"] ?? []).flatMap((a) => a.split(",")).map((a) => a.trim()).filter((a) => a !== "");
  const sampling: Partial<SamplingParams> = {};
  if (temperature !== undefined) sampling.temperature = temperature;
  if (maxTokens !== undefined) sampling.maxTokens = maxTokens;
  const dbSpec = values.db ?? "harnessrl.sqlite";

  const policy = policyOfEngine(parseEngineSpec(values.engine), values["model-dir"]);
  const engine = await createEngine(policy.engine, policy.modelDir ? { codec: policy.codec } : {});
  const store = openStore(dbSpec);
  const server = new ProxyServer({
    engine,
    store,
    planner: createHistoryPlanner(store),
    open: values.open === true,
    adminToken: values["admin-token"] ?? process.env.HARNESSRL_ADMIN_TOKEN,
    sampling,
    modelAliases: aliases,
    strictModels: values["strict-models"] === true,
    strictTools: values["strict-tools"] === true,
    maxBodyBytes: maxBodyMb === undefined ? undefined : Math.floor(maxBodyMb * 1024 * 1024),
    onRecord: values.verbose ? (r) => console.log(callLogLine(r)) : undefined,
  });
  const urls = await server.listen(port, values.host ?? "127.0.0.1");
  console.log(
    [
      `harnessrl proxy: engine ${engine.spec}, model "${engine.model.id}" (context ${engine.model.contextWindow}), records in ${dbSpec}${values.open ? ", OPEN mode (any credential)" : ""}`,
      `  OpenAI base URL (Chat Completions, Responses): ${urls.openai}`,
      `  Anthropic base URL (Messages):                 ${urls.anthropic}`,
      `  Admin API:                                     ${urls.admin}  (admin token: ${server.adminToken})`,
      `  Models: ${values["strict-models"] ? [engine.model.id, ...aliases].join(", ") : "any name (the policy serves them all; --strict-models to restrict)"}`,
    ].join("\n"),
  );

  await untilStopped();
  await server.close();
  await engine.close();
  store.close();
  return 0;
}

export const proxyCommand: Command = {
  name: "proxy",
  handlesSignals: true,
  summary: "serve the policy to harnesses (OpenAI + Anthropic APIs) and record every call token-exactly",
  usage,
  run,
};
