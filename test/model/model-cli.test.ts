import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { MODEL_PRESETS } from "../../src/model/presets.js";
import { loadTokenizer } from "../../src/tokenizer/load.js";
import { TorchTrainer } from "../../src/trainer/torch/torch-trainer.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const cli = join(root, "dist", "cli", "main.js");
const dir = mkdtempSync(join(tmpdir(), "harnessrl-model-cli-"));

function harnessrl(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", env: { ...process.env, HARNESSRL_TORCH_THREADS: "1" } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("harnessrl model", () => {
  it("init writes a model directory that info, the tokenizer loader and the chat template accept", () => {
    const out = join(dir, "tiny");
    const init = harnessrl("model", "init", "--preset", "tiny-1m", "--seed", "4", "--out", out);
    expect(init.stderr).toBe("");
    expect(init.status).toBe(0);
    expect(init.stdout).toContain("1,018,368 parameters");

    const info = harnessrl("model", "info", out, "--json");
    expect(info.status).toBe(0);
    const summary = JSON.parse(info.stdout) as Record<string, unknown>;
    expect(summary).toMatchObject({ parameters: 1_018_368, preset: "tiny-1m", seed: 4, policyVersion: 0, tokenizer: "bytes", hasChatTemplate: true, dtypes: ["F32"] });
    expect(summary.config).toMatchObject({ modelType: "qwen3", vocabSize: 265, maxPositions: 8192, tieWordEmbeddings: true });

    const tokenizerConfig = JSON.parse(readFileSync(join(out, "tokenizer_config.json"), "utf8")) as Record<string, unknown>;
    expect(tokenizerConfig.chat_template).toBe(readFileSync(join(root, "templates", "chatml-tools.jinja"), "utf8"));
    expect(tokenizerConfig.eos_token).toBe("<|im_end|>");
    const tok = loadTokenizer(out);
    expect(tok.vocabSize).toBe(265);
    expect(tok.encode("<|im_start|>hi<|im_end|>")).toEqual([257, 104, 105, 258]);
  });

  it("refuses to overwrite a model without --force, and rejects unknown presets and bad seeds", () => {
    const out = join(dir, "twice");
    expect(harnessrl("model", "init", "--preset", "tiny-1m", "--seed", "1", "--out", out).status).toBe(0);
    const again = harnessrl("model", "init", "--preset", "tiny-1m", "--seed", "1", "--out", out);
    expect(again.status).toBe(2);
    expect(again.stderr).toContain("--force");
    const unknown = harnessrl("model", "init", "--preset", "huge", "--seed", "1", "--out", join(dir, "x"));
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("tiny-1m");
    expect(harnessrl("model", "init", "--preset", "tiny-1m", "--seed", "-3", "--out", join(dir, "y")).status).toBe(2);
    expect(harnessrl("model", "info", join(dir, "nothing-here")).status).toBe(2);
    // Six CLI starts, two of them building a model with torch: over 60 s once on a 2-core machine at load ~12.
  }, 180_000);

  it("lists the same presets (names and sizes) as the worker builds", async () => {
    const trainer = await TorchTrainer.start({ threads: 1 });
    try {
      expect(trainer.info.presets.map((p) => [p.name, p.parameters, p.modelType, p.tokenizer])).toEqual(MODEL_PRESETS.map((p) => [p.name, p.parameters, p.modelType, p.tokenizer]));
    } finally {
      await trainer.close();
    }
  });
});
