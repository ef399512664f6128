import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startProxy, weatherAgent, type TestProxy } from "./helpers.js";

/** Writes raw HTTP and collects what comes back until the server closes the socket (or `ms` pass). */
function rawExchange(port: number, send: (socket: Socket) => void, ms: number): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let text = "";
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(() => finish(false), ms);
    socket.on("data", (d) => (text += d.toString("utf8")));
    socket.on("close", () => finish(true));
    socket.on("error", () => finish(true));
    socket.on("connect", () => send(socket));
  });
}

describe("proxy: slow, oversized and hostile HTTP is bounded and answered with a status", () => {
  let p: TestProxy;
  let key: string;
  beforeAll(async () => {
    p = await startProxy(weatherAgent, { engine: { contextWindow: 32_768 }, proxy: { headersTimeoutMs: 1_000, requestTimeoutMs: 1_500, maxBodyBytes: 1024 * 1024, maxBufferedBodyBytes: 1536 * 1024 } });
    key = p.session().apiKey;
  });
  afterAll(async () => p.close());

  it("a 100 KB header → 431 with a JSON body, not a reset connection", async () => {
    const r = await rawExchange(p.server.port, (s) => s.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(100_000)}\r\n\r\n`), 5_000);
    expect(r.text).toMatch(/^HTTP\/1\.1 431 /);
    expect(r.text).toContain('"code":"headers_too_large"');
  });

  it("a body trickled slower than the request timeout → 408 and the connection is closed", async () => {
    const t0 = Date.now();
    const r = await rawExchange(
      p.server.port,
      (s) => {
        s.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":`);
        const drip = setInterval(() => (s.writable ? s.write(" ") : clearInterval(drip)), 200);
        s.on("close", () => clearInterval(drip));
      },
      15_000,
    );
    expect(r.closed).toBe(true);
    expect(r.text).toMatch(/^HTTP\/1\.1 408 /);
    // Timeouts are checked every 2 s: closed well before the 15 s this test would wait.
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it("stalled large bodies together cannot hold more than the buffered-body budget: the one over it gets 503, retryable", async () => {
    const half = 900 * 1024;
    const opened: Socket[] = [];
    const statusOf = (text: string): number => Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0);
    // Two clients each send 900 KiB of a 1 MiB body and stall: 1.8 MiB > the 1.5 MiB budget.
    const answers = await Promise.all(
      [0, 1].map((i) =>
        rawExchange(
          p.server.port,
          (s) => {
            opened.push(s);
            s.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${1024 * 1024}\r\n\r\n`);
            setTimeout(() => s.write(`{"model":"policy","messages":[{"role":"user","content":"${"x".repeat(half)}`), i * 300);
          },
          4_000,
        ),
      ),
    );
    const statuses = answers.map((a) => statusOf(a.text)).sort();
    // One is refused at once with 503 (retry later); the other is cut by the request timeout (408).
    expect(statuses).toEqual([408, 503]);
    const busy = answers.find((a) => statusOf(a.text) === 503);
    expect(busy?.text).toContain('"code":"proxy_busy"');
  });

  it("an oversized body still being sent → a 413 the client reads (5 of 5)", async () => {
    for (let i = 0; i < 5; i++) {
      const r = await fetch(`${p.urls.openai}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "policy", messages: [{ role: "user", content: "z".repeat(3 * 1024 * 1024) }] }),
      });
      expect(r.status).toBe(413);
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe("payload_too_large");
    }
  });

  it("still answers normally afterwards, and the budget was given back", async () => {
    const r = await p.openai(key).chat.completions.create({ model: "policy", messages: [{ role: "user", content: "y".repeat(600 * 1024) }] }).catch((e: unknown) => e);
    // 600 KiB fits the budget again (the stalled bodies' bytes were released); the engine's context then refuses it.
    expect((r as { status?: number }).status).toBe(400);
    expect((r as { code?: string }).code).toBe("context_length_exceeded");
    // Refused by the estimate (text bytes / the longest token's bytes), before the 600 KiB were rendered or tokenized.
    expect((r as { message?: string }).message).toMatch(/prompt is at least \d+ tokens \(614\d{3} bytes of text\)/);
    const ok = await p.openai(key).chat.completions.create({ model: "policy", messages: [{ role: "user", content: "ok?" }] });
    expect(ok.choices[0]?.message.content).toContain("Echo: ok?");
  });
});
