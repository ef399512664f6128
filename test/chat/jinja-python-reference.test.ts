import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_TEMPLATE_PATH } from "../../src/chat/codec.js";
import { toHfMessage, toHfTool } from "../../src/chat/hf-messages.js";
import { JinjaChatRenderer } from "../../src/chat/jinja-renderer.js";
import type { ChatMessage, ToolSpec } from "../../src/chat/types.js";
import { randomConversation, randomTools, rng } from "./conversations.js";

/**
 * The TypeScript renderer against Python's jinja2 configured like `apply_chat_template`: same templates, same
 * conversations, identical text required. Uses the first Python on this machine that has jinja2 (skipped otherwise).
 */
const PYTHON = ["python3", "/usr/bin/python3"].find((py) => spawnSync(py, ["-c", "import jinja2"]).status === 0);
const hasJinja2 = PYTHON !== undefined;

const fixtures = join(import.meta.dirname, "fixtures");
const templates: Record<string, string> = {
  default: readFileSync(DEFAULT_TEMPLATE_PATH, "utf8"),
  hermes: readFileSync(join(fixtures, "hermes-style.jinja"), "utf8"),
  reasoning: readFileSync(join(fixtures, "reasoning-style.jinja"), "utf8"),
};

interface Case {
  template: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
  addGenerationPrompt: boolean;
  variables?: Record<string, unknown>;
}

function pythonRender(cases: Case[]): ({ ok: string } | { error: string })[] {
  const request = {
    templates,
    cases: cases.map((c) => ({
      template: c.template,
      context: {
        ...c.variables,
        messages: c.messages.map(toHfMessage),
        tools: c.tools.length > 0 ? c.tools.map(toHfTool) : null,
        add_generation_prompt: c.addGenerationPrompt,
        bos_token: "",
        eos_token: "<|im_end|>",
      },
    })),
  };
  const r = spawnSync(PYTHON as string, [join(fixtures, "render_reference.py")], { input: JSON.stringify(request), encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`reference renderer failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as ({ ok: string } | { error: string })[];
}

describe.skipIf(!hasJinja2)("rendering matches Python jinja2 (apply_chat_template settings)", () => {
  it("on 150 random conversations for each test template, with and without a generation prompt", () => {
    const r = rng(77);
    const cases: Case[] = [];
    for (const template of Object.keys(templates)) {
      for (let i = 0; i < 150; i++) {
        let messages = randomConversation(r);
        // The Hermes-style template only accepts a system message first; keep its cases renderable.
        if (template === "hermes") messages = messages.filter((m, k) => m.role !== "system" || k === 0);
        const c: Case = { template, messages, tools: randomTools(r), addGenerationPrompt: r() < 0.5 };
        if (template === "reasoning" && r() < 0.3) c.variables = { enable_thinking: false };
        cases.push(c);
      }
    }
    // Edge cases for whitespace handling and Python string methods.
    for (const template of Object.keys(templates)) {
      cases.push({
        template,
        messages: [
          { role: "user", content: "  spaced\n" },
          { role: "assistant", content: "\n\n  lead <think>x</think>", reasoning: "\n  r  \n" },
          { role: "user", content: "<tool_response>\nfake\n</tool_response>" },
        ],
        tools: [],
        addGenerationPrompt: true,
      });
    }
    const expected = pythonRender(cases);
    cases.forEach((c, i) => {
      const renderer = new JinjaChatRenderer(templates[c.template] as string, { eosToken: "<|im_end|>", variables: c.variables ?? {} });
      const want = expected[i];
      if (want && "ok" in want) expect(renderer.render(c.messages, c.tools, { addGenerationPrompt: c.addGenerationPrompt }), `${c.template} case ${i}`).toBe(want.ok);
      else expect(() => renderer.render(c.messages, c.tools, { addGenerationPrompt: c.addGenerationPrompt })).toThrow();
    });
  }, 120_000);

  it("raises the same template errors", () => {
    const cases: Case[] = [{ template: "hermes", messages: [{ role: "user", content: "a" }, { role: "system", content: "late" }], tools: [], addGenerationPrompt: true }];
    const [want] = pythonRender(cases);
    expect(want && "error" in want ? want.error : "").toContain("only the first message may be a system message");
    expect(() => new JinjaChatRenderer(templates.hermes as string).render(cases[0]?.messages ?? [], [], { addGenerationPrompt: true })).toThrow(/only the first message may be a system message/);
  });
});
