import type { ServerResponse } from "node:http";
import type { RunCatalog } from "./catalog.js";

/** How often watched runs are polled: well inside the 2 s a new metrics line or rollout may take to show. */
export const POLL_MS = 400;
/** Most clients streamed to at once (each holds a socket). */
const MAX_CLIENTS = 64;
/** A comment line now and then keeps proxies and the browser from timing an idle stream out. */
const HEARTBEAT_MS = 15_000;

interface Client {
  res: ServerResponse;
  /** A run id, or null for the runs list (every run). */
  run: string | null;
}

/**
 * Server-sent events: while anyone listens, the runs they watch are polled (bounded: one timer, a fixed period, only
 * loaded runs) and each change is announced as a `run` event; clients then re-read the JSON they show.
 */
export class LiveHub {
  private readonly clients = new Set<Client>();
  private readonly seen = new Map<string, { generation: number; rollouts: number }>();
  private timer: NodeJS.Timeout | null = null;
  private lastBeat = Date.now();
  private lastScan = 0;

  constructor(private readonly catalog: RunCatalog) {}

  /** Starts streaming to `res`; false when the client limit is reached (the caller answers 503). */
  subscribe(res: ServerResponse, run: string | null): boolean {
    if (this.clients.size >= MAX_CLIENTS) return false;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive" });
    res.write(`retry: 1000\n\n`);
    // Changes from now on are news to this client, even those that land before the first tick.
    for (const r of this.catalog.loaded()) if (!this.seen.has(r.id)) this.seen.set(r.id, { generation: r.generation, rollouts: r.rollouts.size });
    const client: Client = { res, run };
    this.clients.add(client);
    res.on("close", () => {
      this.clients.delete(client);
      if (this.clients.size === 0) this.stop();
    });
    this.start();
    return true;
  }

  get size(): number {
    return this.clients.size;
  }

  /** One poll of every watched run (exposed for tests; the timer calls it). */
  tick(now = Date.now()): void {
    const wantsAll = [...this.clients].some((c) => c.run === null);
    // New run directories appear in the list without a reload; a rescan is a readdir, kept to every 2 s.
    if (wantsAll && now - this.lastScan > 2000) {
      this.catalog.scan();
      this.lastScan = now;
    }
    const watched = new Set([...this.clients].map((c) => c.run));
    for (const run of this.catalog.loaded()) {
      if (!wantsAll && !watched.has(run.id)) continue;
      run.poll();
      const before = this.seen.get(run.id);
      const now2 = { generation: run.generation, rollouts: run.rollouts.size };
      this.seen.set(run.id, now2);
      if (before === undefined || before.generation === now2.generation) continue;
      const fresh = run.rollouts.idsFrom(Math.min(before.rollouts, now2.rollouts)).slice(-50);
      const data = JSON.stringify({ run: run.id, metricsLines: run.metrics.length, rollouts: now2.rollouts, newRollouts: fresh, summary: run.summary(now) });
      for (const c of this.clients) if (c.run === null || c.run === run.id) c.res.write(`event: run\ndata: ${data}\n\n`);
    }
    if (now - this.lastBeat > HEARTBEAT_MS) {
      this.lastBeat = now;
      for (const c of this.clients) c.res.write(`: beat\n\n`);
    }
  }

  close(): void {
    for (const c of this.clients) c.res.end();
    this.clients.clear();
    this.stop();
  }

  private start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), POLL_MS);
    this.timer.unref();
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
