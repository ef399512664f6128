import { mkdirSync, mkdtempSync, rmSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { mayBeHalfCreated } from "../../src/sandbox/state.js";

describe("which ownerless sandbox directories a reaper leaves alone", () => {
  const root = mkdtempSync(join(tmpdir(), "hrl-ownerless-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("leaves a directory just created (its create may be in progress) and one gone since it was listed (its owner destroyed it), and reaps an old one", async () => {
    const fresh = join(root, "fresh");
    mkdirSync(fresh);
    expect(await mayBeHalfCreated(fresh)).toBe(true);
    // Listed, then removed by its live owner before the reaper looked at it: not "left by a crashed control plane".
    expect(await mayBeHalfCreated(join(root, "gone"))).toBe(true);
    const old = join(root, "old");
    mkdirSync(old);
    const twoMinutesAgo = new Date(Date.now() - 120_000);
    utimesSync(old, twoMinutesAgo, twoMinutesAgo);
    expect(await mayBeHalfCreated(old)).toBe(false);
  });
});
