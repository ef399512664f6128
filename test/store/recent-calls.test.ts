import { describe, expect, it } from "vitest";
import { RecentCalls, type RecentCall } from "../../src/store/recent-calls.js";

const call = (n: number, chars: number): RecentCall => ({ tokens: { length: n, hash: `h${n}` }, messagesJson: "m".repeat(chars), rawRequestJson: "r".repeat(chars), toolsJson: "[]" });

describe("RecentCalls (the store's delta bases)", () => {
  it("drops the oldest calls' texts first when the texts exceed their budget, and keeps their digests", () => {
    const recent = new RecentCalls(100, 10_000);
    // 2,002 characters of text each: the 5th call crosses the budget, and texts are dropped from the oldest until at
    // most half of it is left (c0–c2 go, c3 and c4 keep theirs); the 8th crosses it again (c3–c5 go).
    for (let i = 0; i < 8; i++) recent.set(`c${i}`, call(i, 1000));
    const withText = [...Array(8).keys()].filter((i) => recent.get(`c${i}`)?.messagesJson !== null);
    expect(withText).toEqual([6, 7]);
    for (let i = 0; i < 8; i++) expect(recent.get(`c${i}`)?.tokens).toEqual({ length: i, hash: `h${i}` });
    // The accounting stays right: two more fit before the next drop, the third drops again.
    recent.set("c8", call(8, 1000));
    recent.set("c9", call(9, 1000));
    expect(recent.get("c6")?.messagesJson).not.toBeNull();
    recent.set("c10", call(10, 1000));
    expect(recent.get("c6")?.messagesJson).toBeNull();
    expect(recent.get("c10")?.messagesJson).not.toBeNull();
  });

  it("forgets the least recently stored call beyond its capacity", () => {
    const recent = new RecentCalls(3);
    for (let i = 0; i < 5; i++) recent.set(`c${i}`, call(i, 10));
    expect(["c0", "c1", "c2", "c3", "c4"].map((id) => recent.get(id) !== undefined)).toEqual([false, false, true, true, true]);
  });
});
