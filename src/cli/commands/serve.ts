import { randomBytes } from "node:crypto";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { UserError } from "../../core/errors.js";
import { isLoopback } from "../../dashboard/access.js";
import { createEngine } from "../../engine/index.js";
import { EngineService, asServable } from "../../engine/service/server.js";
import { isHotSwappable } from "../../engine/types.js";
import { joinNegativeValues, parseOptions, portOption } from "../args.js";
import type { Command } from "../command.js";
import { untilStopped } from "../until-stopped.js";

const usage = `Usage: harnessrl serve --model-dir DIR [--host H] [--port N] [engine options] [--upload-dir DIR]

Serves one embedded llama.cpp engine over HTTP, token-in/token-out, so several rollout nodes (and proxies) share it:
engines reach it as llamacpp-http:http://<host>:<port>. Every answer says which policy version and engine instance
sampled it; the trainer loads each new policy version through the admin endpoint (weights pushed or named as a path
the server reads), and the call returns once the version is served (docs/cluster.md).

  GET  /v1/info        model, context window, policy version, engine instance (open: health checks)
  GET  /v1/codec       tokenizer and chat template files (generation token)
  POST /v1/generate    {prompt: [ids], params: {temperature, max_tokens, top_p, top_k, min_p, seed?}, stream?}
  PUT  /v1/policy/uploads/<version>/<file>, POST /v1/policy {version, uploaded: true | model_dir}  (admin token)

Options:
  --model-dir DIR     the policy's model directory (safetensors, config.json, tokenizer, chat template)
  --host H            interface (default 127.0.0.1; any other needs a generation token)
  --port N            port (default 8500; 0 picks a free one)
  --threads N         llama.cpp threads (default: the engine's)
  --sequences N       concurrent sequences (default 8)
  --ctx N             tokens per sequence (default min(8192, the model's positions))
  --batch MODE        isolated (default) or shared (one llama.cpp batch for all sequences)
  --cache DIR         GGUF export cache (default ~/.cache/harnessrl/gguf)
  --upload-dir DIR    where pushed policy versions land before loading (default <cache>/uploads-<port>)
  Tokens (the environment keeps them out of the process list):
  HARNESSRL_SERVE_TOKEN        bearer token for /v1/generate and /v1/codec (or --token)
  HARNESSRL_SERVE_ADMIN_TOKEN  bearer token for policy loads (or --admin-token; default: a random one, printed)`;

export const serveCommand: Command = {
  name: "serve",
  summary: "serve one llama.cpp engine over HTTP (token-in/token-out, policy version loads) for rollout nodes to share",
  usage,
  handlesSignals: true,
  async run(argv) {
    const values = parseOptions(
      joinNegativeValues(argv),
      {
        "model-dir": { type: "string" },
        host: { type: "string" },
        port: { type: "string" },
        threads: { type: "string" },
        sequences: { type: "string" },
        ctx: { type: "string" },
        batch: { type: "string" },
        cache: { type: "string" },
        "upload-dir": { type: "string" },
        token: { type: "string" },
        "admin-token": { type: "string" },
      },
      usage,
    );
    if (!values["model-dir"]) throw new UserError("invalid_arguments", `serve needs --model-dir DIR\n\n${usage}`);
    const modelDir = resolve(values["model-dir"]);
    const host = values.host ?? "127.0.0.1";
    const port = portOption(values.port, 8500);
    const token = values.token ?? (process.env.HARNESSRL_SERVE_TOKEN || undefined);
    if (token === undefined && !isLoopback(host)) throw new UserError("serve_token_required", `serving on ${host} lets anyone who reaches it sample: set HARNESSRL_SERVE_TOKEN (or --token)`);
    const given = values["admin-token"] ?? (process.env.HARNESSRL_SERVE_ADMIN_TOKEN || undefined);
    const adminToken = given ?? randomBytes(24).toString("base64url");
    const cache = resolve(values.cache ?? join(homedir(), ".cache", "harnessrl", "gguf"));
    const options: Record<string, string> = { cache };
    for (const k of ["threads", "sequences", "ctx", "batch"] as const) if (values[k] !== undefined) options[k] = values[k];

    const engine = await createEngine({ kind: "llamacpp", target: modelDir, options });
    if (!isHotSwappable(engine)) throw new UserError("invalid_engine_spec", "the llama.cpp engine is not hot-swappable");
    const service = new EngineService({
      engine: asServable(engine),
      modelDir,
      ...(token !== undefined ? { token } : {}),
      adminToken,
      uploadDir: resolve(values["upload-dir"] ?? join(cache, `uploads-${port}`)),
      onPolicy: (version, ms) => console.log(`harnessrl serve: policy version ${version} served (loaded in ${Math.round(ms)} ms)`),
    });
    const url = await service.listen(port, host);
    const info = service.info;
    console.log(
      [
        `harnessrl serve: ${info.engine_instance}, model "${info.model}" (context ${info.context_window}), policy version ${info.policy_version}`,
        `  engine spec for nodes: llamacpp-http:${url}`,
        `  generation: ${token === undefined ? "open (loopback only)" : "bearer token (HARNESSRL_SERVE_TOKEN)"}`,
        `  policy loads: ${given === undefined ? `admin token ${adminToken}` : "bearer admin token (HARNESSRL_SERVE_ADMIN_TOKEN)"}`,
      ].join("\n"),
    );
    await untilStopped();
    await service.close();
    await engine.close();
    return 0;
  },
};
