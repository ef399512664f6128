import { describe, expect, it } from "vitest";
import { hasPrefix } from "../../src/core/strings.js";

describe("hasPrefix", () => {
  it("agrees with startsWith for short and long prefixes, equal strings, longer prefixes and late mismatches", () => {
    const long = "<|im_start|>system\n" + "rule ".repeat(2000) + "😀";
    const cases: [string, string][] = [
      ["abc", "ab"],
      ["abc", "abd"],
      ["abc", ""],
      [long, long],
      [long, long.slice(0, -1)],
      [long, `${long}x`],
      [long, `${long.slice(0, 5000)}X`],
      [`${long}tail`, long],
      [long.slice(0, 70), long.slice(0, 64)],
    ];
    for (const [text, prefix] of cases) expect(hasPrefix(text, prefix), `${text.length}/${prefix.length}`).toBe(text.startsWith(prefix));
  });
});
