import { describe, expect, it } from "vitest";
import { parseVerifierOutput } from "../../src/tasks/verifier-result.js";

describe("parseVerifierOutput", () => {
  it("reads the score and sub-scores from the last non-empty line, ignoring earlier output", () => {
    const r = parseVerifierOutput('checking...\n{"score": 0.4}\n{"score": 0.75, "subscores": {"f1": 0.75, "search_hits": [1, 0]}}\n\n');
    expect(r).toEqual({ score: 0.75, subscores: { f1: 0.75, search_hits: [1, 0] } });
  });

  it("defaults missing sub-scores to an empty record and keeps a reported error", () => {
    expect(parseVerifierOutput('{"score": 1}')).toEqual({ score: 1, subscores: {} });
    expect(parseVerifierOutput('{"score": 0, "error": "no answer.txt"}')).toEqual({ score: 0, subscores: {}, error: "no answer.txt" });
  });

  it.each([
    ["", /printed nothing/],
    ["0.5", /contract.*\(root\)/],
    ["done", /not JSON: done/],
    ['{"score": 1.5}', /score:.*1\.5|score: Too big/],
    ['{"score": -0.1}', /score/],
    ['{"score": "1"}', /score/],
    ['{"subscores": {}}', /score/],
    ['{"score": 1, "subscores": {"x": "yes"}}', /subscores\.x/],
    ["[1]", /contract/],
  ])("gives score 0 and a clear error for off-contract output %j", (stdout, why) => {
    const r = parseVerifierOutput(stdout);
    expect(r.score).toBe(0);
    expect(r.subscores).toEqual({});
    expect(r.error).toMatch(why);
  });

  it("clips a huge last line in the error instead of echoing it whole", () => {
    const r = parseVerifierOutput("x".repeat(10_000));
    expect(r.error!.length).toBeLessThan(400);
  });
});
