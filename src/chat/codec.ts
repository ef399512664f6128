import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { UserError } from "../core/errors.js";
import { ByteTokenizer } from "../tokenizer/bytes.js";
import { loadTokenizer, readJsonFile, readTokenizerConfig } from "../tokenizer/load.js";
import type { Tokenizer } from "../tokenizer/types.js";
import { ChatMLToolsRenderer } from "./chatml-renderer.js";
import { guardRenderer } from "./guarded-renderer.js";
import { JinjaChatRenderer } from "./jinja-renderer.js";
import type { JinjaRendererOptions } from "./jinja-renderer.js";
import type { ChatRenderer } from "./renderer.js";

/** What the proxy needs to turn a conversation into prompt tokens and sampled tokens back into text. */
export interface Codec {
  tokenizer: Tokenizer;
  renderer: ChatRenderer;
}

/** The built-in chat template (works from src/ under vitest and from dist/ after the build). */
export const DEFAULT_TEMPLATE_PATH = fileURLToPath(new URL("../../templates/chatml-tools.jinja", import.meta.url));

export function defaultTemplateSource(): string {
  return readFileSync(DEFAULT_TEMPLATE_PATH, "utf8");
}

let cachedDefault: Codec | undefined;
let cachedSource: string | undefined;

/** Jinja drops one trailing newline of a template, so a copy with or without it renders the same. */
function isDefaultTemplate(source: string): boolean {
  cachedSource ??= defaultTemplateSource().replace(/\n$/, "");
  return source.replace(/\n$/, "") === cachedSource;
}

/** The default template through the Jinja interpreter (the reference the fast renderer is tested against). */
export function defaultJinjaRenderer(): JinjaChatRenderer {
  return new JinjaChatRenderer(defaultTemplateSource(), { eosToken: "<|endoftext|>", endOfTurn: "<|im_end|>" });
}

/**
 * The tiny byte tokenizer with the default ChatML + Hermes tool-call template (rendered by its hand-written
 * equivalent, see chatml-renderer.ts); built once per process.
 */
export function defaultCodec(): Codec {
  if (!cachedDefault) {
    const tokenizer = new ByteTokenizer();
    cachedDefault = { tokenizer, renderer: guardRenderer(new ChatMLToolsRenderer(), tokenizer) };
  }
  return cachedDefault;
}

/**
 * Tokenizer + chat template of a model directory: `chat_template` from tokenizer_config.json (a string, or the
 * "default" entry of a named list), else a `chat_template.jinja` or `chat_template.json` file next to it. Extra template variables (e.g.
 * `enable_thinking`) can be given.
 */
export function loadCodec(modelDir: string, options: Pick<JinjaRendererOptions, "variables" | "endOfTurn"> = {}): Codec {
  if (!existsSync(modelDir)) throw new UserError("model_dir_not_found", `model directory ${modelDir} does not exist`);
  const config = readTokenizerConfig(modelDir);
  const tokenizer = loadTokenizer(modelDir);
  let source: string | undefined;
  const t = config.chat_template;
  if (typeof t === "string") source = t;
  else if (Array.isArray(t)) source = (t.find((x) => x.name === "default") ?? t[0])?.template;
  const file = join(modelDir, "chat_template.jinja");
  if (source === undefined && existsSync(file)) source = readFileSync(file, "utf8");
  // Some repositories (processors) keep it in chat_template.json as {"chat_template": "..."}.
  const jsonFile = join(modelDir, "chat_template.json");
  if (source === undefined && existsSync(jsonFile)) source = readJsonFile(jsonFile, z.object({ chat_template: z.string() }), "chat template").chat_template;
  if (source === undefined) throw new UserError("invalid_model_dir", `${modelDir} has no chat template (tokenizer_config.json chat_template, chat_template.jinja or chat_template.json)`);
  // The default template ignores bos/eos and extra variables, so its fast equivalent renders the same text.
  // Request text never becomes control tokens: only the template emits special tokens (guarded-renderer.ts).
  if (isDefaultTemplate(source) && options.endOfTurn === undefined) return { tokenizer, renderer: guardRenderer(new ChatMLToolsRenderer(), tokenizer) };
  const rendererOptions: JinjaRendererOptions = { ...options };
  if (config.bos_token) rendererOptions.bosToken = config.bos_token;
  if (config.eos_token) rendererOptions.eosToken = config.eos_token;
  return { tokenizer, renderer: guardRenderer(new JinjaChatRenderer(source, rendererOptions), tokenizer) };
}
