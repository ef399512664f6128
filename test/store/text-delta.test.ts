import { describe, expect, it } from "vitest";
import { applyTextDelta, textDelta } from "../../src/store/text-delta.js";

/** Deterministic pseudo-random generator (tests must not depend on Math.random's sequence). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const ALPHABET = ["a", "b", "{", '"', "\\n", "é", "✓", "😀", "😁", "\uD83D", "x"];

function randomText(rand: () => number, n: number): string {
  let out = "";
  for (let i = 0; i < n; i++) out += ALPHABET[Math.floor(rand() * ALPHABET.length)];
  return out;
}

describe("text deltas", () => {
  it("round-trips 2,000 random (base, text) pairs that share prefixes, suffixes, both or neither", () => {
    const rand = rng(7);
    for (let k = 0; k < 2000; k++) {
      const prefix = randomText(rand, Math.floor(rand() * 3000));
      const suffix = randomText(rand, Math.floor(rand() * 300));
      const base = prefix + randomText(rand, Math.floor(rand() * 50)) + suffix;
      const text = (rand() < 0.8 ? prefix : "") + randomText(rand, Math.floor(rand() * 80)) + (rand() < 0.7 ? suffix : "");
      const d = textDelta(base, text);
      if (d === null) continue;
      expect(applyTextDelta(base, d.keep, d.tail, d.middle)).toBe(text);
      expect(d.keep + d.tail).toBeLessThanOrEqual(Math.min(base.length, text.length));
    }
  });

  it("stores only the new part of a conversation that grew by one turn, with the shared tail after it", () => {
    const history = JSON.stringify({ model: "m", messages: Array.from({ length: 30 }, (_, i) => ({ role: "user", content: `turn ${i} `.repeat(40) })), tools: [{ name: "bash" }] });
    const grown = history.replace('],"tools"', ',{"role":"assistant","content":"done"}],"tools"');
    const d = textDelta(history, grown);
    expect(d?.middle).toBe(',{"role":"assistant","content":"done"}');
    expect(applyTextDelta(history, d!.keep, d!.tail, d!.middle)).toBe(grown);
  });

  it("never splits a surrogate pair: the stored middle is always well-formed UTF-16", () => {
    const base = `${"x".repeat(100)}😀${"y".repeat(100)}`;
    const text = `${"x".repeat(100)}😁${"y".repeat(100)}`; // same high surrogate, different low one
    const d = textDelta(base, text)!;
    expect(d.middle).toBe("😁");
    expect(Buffer.from(d.middle, "utf8").toString("utf8")).toBe(d.middle); // survives UTF-8 storage
    const reversed = textDelta(`${"y".repeat(100)}\uD83C\uDE00`, `${"y".repeat(100)}\uD83D\uDE00`)!; // same low surrogate
    expect(reversed.middle).toBe("\uD83D\uDE00");
  });

  it("gives no delta when the texts share too little to pay for a base lookup", () => {
    expect(textDelta("abc", "abd")).toBeNull();
    expect(textDelta("x".repeat(100), "y".repeat(100))).toBeNull();
  });
});
