import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { DiskMeter } from "../../src/sandbox/disk-meter/client.js";
import { diskUsage } from "../../src/sandbox/disk-usage.js";
import { tempRoot } from "./helpers.js";

/** Two sandbox-like pairs of directories (workspace, HOME) holding files of known sizes. */
function dirs(): { a: string[]; b: string[] } {
  const root = tempRoot("disk-meter");
  onTestFinished(() => root.remove());
  const a = [join(root.path, "a-ws"), join(root.path, "a-home")];
  const b = [join(root.path, "b-ws"), join(root.path, "b-home")];
  for (const d of [...a, ...b]) mkdirSync(join(d, "sub"), { recursive: true });
  writeFileSync(join(a[0]!, "one"), Buffer.alloc(300_000, 1));
  writeFileSync(join(a[1]!, "sub", "two"), Buffer.alloc(70_000, 2));
  writeFileSync(join(b[0]!, "three"), Buffer.alloc(1_000_000, 3));
  return { a, b };
}

describe("disk meter: sandboxes' disk budgets measured in a small child process, not by forking the control plane", () => {
  it("measures what du measures in this process, in a separate meter process", async () => {
    const { a, b } = dirs();
    const meter = new DiskMeter();
    onTestFinished(() => meter.close());
    expect(await meter.measure(a)).toBe(await diskUsage(a));
    expect(meter.external).toBe(true);
    expect(await meter.measure(b)).toBe(await diskUsage(b));
    expect(await meter.measure(a)).toBeGreaterThan(370_000);
  });

  it("answers concurrent requests that share one du run, the same roots twice included, each with its own total", async () => {
    const { a, b } = dirs();
    const meter = new DiskMeter();
    onTestFinished(() => meter.close());
    const [expectA, expectB] = [await diskUsage(a), await diskUsage(b)];
    // One du run serves the waiting requests; GNU du prints a repeated root once, and both requests still get it.
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => meter.measure(i % 2 === 0 ? a : b)));
    expect(answers).toEqual(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? expectA : expectB)));
    expect(await meter.measure([join(a[0]!, "gone")])).toBe(0); // a vanished directory holds nothing
  });

  it("keeps measuring when the meter dies: owed answers are measured here, and the next request starts a new meter", async () => {
    const { a } = dirs();
    const expected = await diskUsage(a);
    const meter = new DiskMeter();
    onTestFinished(() => meter.close());
    expect(await meter.measure(a)).toBe(expected);
    const owed = meter.measure(a);
    meter.close();
    expect(await owed).toBe(expected);
    expect(await meter.measure(a)).toBe(expected);
    expect(meter.external).toBe(true);
  });

  it("measures in this process when no meter is built", async () => {
    const { b } = dirs();
    const meter = new DiskMeter("/nonexistent/meter.js");
    onTestFinished(() => meter.close());
    expect(await meter.measure(b)).toBe(await diskUsage(b));
  });
});
