import { UserError } from "../core/errors.js";

/**
 * The model names the proxy answers to: the engine's model id plus aliases, so harnesses can keep their own model
 * names (`claude-sonnet-…`, `gpt-…`). The alias `*` accepts any name (capturing a harness by hand).
 */
export class ModelCatalog {
  private readonly names: Set<string>;
  private readonly any: boolean;

  constructor(
    readonly modelId: string,
    aliases: readonly string[] = [],
  ) {
    this.any = aliases.includes("*");
    this.names = new Set([modelId, ...aliases.filter((a) => a !== "*")]);
  }

  /** 404 in the caller's protocol for a name this proxy does not serve. */
  check(model: string): void {
    if (this.any || this.names.has(model)) return;
    throw new UserError("model_not_found", `model "${model}" is not served here; available: ${[...this.names].join(", ")} (add names with --model-alias)`, {
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
