import { describe, expect, it } from "vitest";
import { parseRunConfig } from "../../src/train/config.js";
import { trainerNeeds } from "../../src/train/trainer-capabilities.js";
import { policyOfConfig } from "../../src/run/policy.js";

const base = { model: { preset: "tiny-1m" }, harnesses: ["chat-agent"], tasks: { train: "calcrun:train?n=4" } };

describe("model.lora in the run config", () => {
  it("fills the defaults (rank 8, alpha 16, no dropout, all seven projections, LoRA warm start) and asks for the lora capability", () => {
    const c = parseRunConfig({ ...base, model: { preset: "tiny-1m", lora: {} } });
    expect(c.model.lora).toEqual({ rank: 8, alpha: 16, dropout: 0, target_modules: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], warm_start: "lora" });
    expect(trainerNeeds(c).map((n) => n.capability)).toContain("lora");
    expect(trainerNeeds(parseRunConfig(base)).map((n) => n.capability)).not.toContain("lora");
  });

  it("rejects unknown projections, duplicates, bad ranks and dropout, and CAPO with LoRA, at their paths", () => {
    const bad = (lora: unknown, extra: Record<string, unknown> = {}): string => {
      try {
        parseRunConfig({ ...base, ...extra, model: { dir: "/m", lora } });
      } catch (e) {
        return (e as Error).message;
      }
      return "accepted";
    };
    expect(bad({ target_modules: ["q_proj", "lm_head"] })).toMatch(/model\.lora\.target_modules\.1/);
    expect(bad({ target_modules: ["q_proj", "q_proj"] })).toMatch(/twice/);
    expect(bad({ rank: 0 })).toMatch(/model\.lora\.rank/);
    expect(bad({ dropout: 1 })).toMatch(/model\.lora\.dropout/);
    expect(bad({ rnak: 4 })).toMatch(/did you mean rank/);
    expect(bad({}, { capo: { top_fraction: 0.25 } })).toMatch(/capo.*model\.lora/);
    expect(bad({ rank: 4 })).toBe("accepted");
  });

  it("serves LoRA policies to vLLM / SGLang as adapters (lora=1), to llama.cpp as merged weights", () => {
    const remote = policyOfConfig(parseRunConfig({ ...base, model: { preset: "tiny-1m", lora: {} }, engine: { kind: "vllm", url: "http://127.0.0.1:8000" } }));
    expect(remote.engine.options.lora).toBe(1);
    const plain = policyOfConfig(parseRunConfig({ ...base, model: { preset: "tiny-1m" }, engine: { kind: "sglang", url: "http://127.0.0.1:8000" } }));
    expect(plain.engine.options.lora).toBeUndefined();
    const local = policyOfConfig(parseRunConfig({ ...base, model: { preset: "tiny-1m", lora: {} } }));
    expect(local.engine.options.lora).toBeUndefined();
  });
});
