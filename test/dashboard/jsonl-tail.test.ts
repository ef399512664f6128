import { appendFileSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { JsonlTail } from "../../src/dashboard/jsonl-tail.js";

const dir = mkdtempSync(join(tmpdir(), "harnessrl-tail-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("JsonlTail: reading a JSONL file while a run appends to it", () => {
  it("returns complete lines only, a torn last line once its newline lands, and skips bad lines", () => {
    const p = join(dir, "m.jsonl");
    const tail = new JsonlTail(p);
    expect(tail.poll()).toEqual({ rows: [], reset: false });
    writeFileSync(p, '{"step":1}\nnot json\n{"step":2,"na');
    expect(tail.poll().rows).toEqual([{ step: 1 }]);
    expect(tail.skipped).toBe(1);
    appendFileSync(p, 'me":"ü✓"}\n');
    expect(tail.poll().rows).toEqual([{ step: 2, name: "ü✓" }]);
    expect(tail.poll().rows).toEqual([]);
  });

  it("starts over when the file shrank (a resumed run cuts metrics.jsonl back to its committed length)", () => {
    const p = join(dir, "r.jsonl");
    writeFileSync(p, '{"step":1}\n{"step":2}\n');
    const tail = new JsonlTail(p);
    expect(tail.poll().rows).toHaveLength(2);
    truncateSync(p, '{"step":1}\n'.length);
    appendFileSync(p, "");
    const again = tail.poll();
    expect(again.reset).toBe(true);
    expect(again.rows).toEqual([{ step: 1 }]);
  });

  it("decodes a multi-byte character split across two reads whole", () => {
    const p = join(dir, "u.jsonl");
    const line = Buffer.from('{"t":"✓✓"}\n', "utf8");
    const cut = line.indexOf(Buffer.from("✓")) + 1;
    writeFileSync(p, line.subarray(0, cut));
    const tail = new JsonlTail(p);
    expect(tail.poll().rows).toEqual([]);
    appendFileSync(p, line.subarray(cut));
    expect(tail.poll().rows).toEqual([{ t: "✓✓" }]);
  });
});
