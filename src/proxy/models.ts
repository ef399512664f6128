import { UserError } from "../core/errors.js";

/**
 * The model names the proxy answers to. By default any name: every real harness sends its own (`claude-sonnet-…`,
 * `gpt-5.5`, and other names for side calls), the policy serves them all, and the record keeps the name asked for
 * (in its raw request; replies echo it). With `strict`, only the engine's model id and the aliases (`*` = any).
 */
export class ModelCatalog {
  private readonly names: Set<string>;
  private readonly any: boolean;

  constructor(
    readonly modelId: string,
    aliases: readonly string[] = [],
    strict = false,
  ) {
    this.any = !strict || aliases.includes("*");
    this.names = new Set([modelId, ...aliases.filter((a) => a !== "*")]);
  }

  /** In strict mode, a 404 in the caller's protocol for a name this proxy does not serve. */
  check(model: string): void {
    if (this.any || this.names.has(model)) return;
    throw new UserError("model_not_found", `model "${model}" is not served here; available: ${[...this.names].join(", ")} (add names with --model-alias, or drop --strict-models)`, {
      details: { param: "model" },
    });
  }

  /** `GET /v1/models`, in a shape both the OpenAI and the Anthropic SDKs read. */
  list(): Record<string, unknown> {
    const created = Math.floor(Date.now() / 1000);
    const data = [...this.names].map((id) => ({
      id,
      object: "model",
      created,
      owned_by: "harnessrl",
      type: "model",
      display_name: id,
      created_at: new Date(created * 1000).toISOString(),
    }));
    return { object: "list", data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
  }
}
