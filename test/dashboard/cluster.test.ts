import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClusterStatusReader } from "../../src/cluster/status.js";
import type { ClusterSnapshot } from "../../src/dashboard/cluster.js";
import { startDashboard, type Dashboard } from "../../src/dashboard/server.js";
import { FAILED_REASON, startClusterDashboard, type ClusterDashboard, type ClusterFixture } from "./cluster-fixture.js";
import { getJson, rawGet } from "./http.js";
import { killChild } from "../../src/core/kill-child.js";

const repo = join(import.meta.dirname, "..", "..");
const root = mkdtempSync(join(tmpdir(), "harnessrl-dash-cluster-"));
const SHORT_TTL_MS = 1500;
let cluster: ClusterDashboard | undefined;
let fixture: ClusterFixture;
let dash: Dashboard;
let plain: Dashboard;

beforeAll(async () => {
  mkdirSync(join(root, "runs"));
  cluster = await startClusterDashboard(join(root, "runs"), join(root, "redis"), SHORT_TTL_MS);
  ({ fixture, dash } = cluster);
  plain = await startDashboard({ runs: join(root, "runs"), port: 0 });
}, 60_000);

afterAll(async () => {
  await plain?.close();
  await cluster?.close();
  rmSync(root, { recursive: true, force: true });
});

describe("the cluster page's API over a real Redis and BullMQ queue", () => {
  it("lists nodes from their heartbeats and the queue's counts and failures", async () => {
    expect(await getJson(dash.port, "/api/config")).toEqual({ cluster: true });
    const snap = await getJson<ClusterSnapshot>(dash.port, "/api/cluster");
    expect(snap.queue).toBe("harnessrl-rollouts");
    expect(snap.jobs).toEqual({ waiting: 3, running: 1, failed: 1, delayed: 1, completed: 0 });
    expect(snap.failed).toHaveLength(1);
    expect(snap.failed[0]).toMatchObject({ id: "fixture.r0", reason: FAILED_REASON, attempts: 1 });
    // maxMemoryMb: node-a's cap; node-c has none; node-b's heartbeat has no such field (a node older than it): none.
    expect(snap.nodes.map((n) => [n.nodeId, n.state, n.healthy, n.capacity, n.running, n.maxMemoryMb])).toEqual([
      ["node-a", "up", true, 4, 1, 4096],
      ["node-b", "up", true, 2, 0, null],
      ["node-c", "cooling", false, 4, 0, null],
    ]);
    expect(snap.nodes[0]).toMatchObject({ host: "host-node-a", completed: 7 });
    expect(snap.nodes[2]?.spooled).toBe(3);
  }, 30_000);

  it("a node whose heartbeat expired is shown lost (unhealthy), with when it was last seen", async () => {
    const before = await getJson<ClusterSnapshot>(dash.port, "/api/cluster");
    const seen = before.nodes.find((n) => n.nodeId === "node-b")!.lastSeenAt;
    const t0 = Date.now();
    let b = before.nodes.find((n) => n.nodeId === "node-b");
    while (b?.state !== "lost" && Date.now() - t0 < SHORT_TTL_MS + 5000) {
      await sleep(100);
      b = (await getJson<ClusterSnapshot>(dash.port, "/api/cluster")).nodes.find((n) => n.nodeId === "node-b");
    }
    expect(b).toMatchObject({ state: "lost", healthy: false, lastSeenAt: seen });
    // A fresh reader never saw it: an expired node it never saw is simply not there.
    const fresh = new ClusterStatusReader(fixture.url);
    try {
      expect((await fresh.snapshot()).nodes.map((n) => n.nodeId)).toEqual(["node-a", "node-c"]);
    } finally {
      await fresh.close();
    }
  }, 30_000);

  it("harnessrl dashboard --cluster URL serves the cluster page and never prints the password", async () => {
    const child = spawn(process.execPath, [join(repo, "dist", "cli", "main.js"), "dashboard", "--runs", join(root, "runs"), "--port", "0", "--cluster", fixture.url], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d));
    try {
      const t0 = Date.now();
      while (!/http:\/\/127\.0\.0\.1:\d+\//.test(out) && child.exitCode === null && Date.now() - t0 < 20_000) await sleep(50);
      const port = Number(/http:\/\/127\.0\.0\.1:(\d+)\//.exec(out)?.[1]);
      expect(port, out).toBeGreaterThan(0);
      expect(out).toContain("cluster: redis://:***@127.0.0.1");
      expect(out).not.toContain(fixture.redis.password);
      expect(await getJson(port, "/api/config")).toEqual({ cluster: true });
      const snap = await getJson<ClusterSnapshot>(port, "/api/cluster");
      expect(snap.jobs).toMatchObject({ waiting: 3, running: 1, failed: 1 });
      expect(snap.nodes.map((n) => n.nodeId)).toContain("node-a");
    } finally {
      killChild(child, "SIGTERM");
      const t1 = Date.now();
      while (child.exitCode === null && child.signalCode === null && Date.now() - t1 < 10_000) await sleep(50);
      killChild(child, "SIGKILL");
    }
    expect(child.exitCode).toBe(0);
  }, 60_000);

  it("without a cluster source there is no cluster page; with Redis down the API answers 503 and recovers", async () => {
    expect(await getJson(plain.port, "/api/config")).toEqual({ cluster: false });
    expect((await rawGet(plain.port, "/api/cluster")).status).toBe(404);
    await fixture.redis.stop();
    const down = await rawGet(dash.port, "/api/cluster");
    expect(down.status).toBe(503);
    expect(down.body).toContain("cannot read the cluster's Redis");
    await fixture.redis.restart();
    const t0 = Date.now();
    let status = 0;
    while (status !== 200 && Date.now() - t0 < 10_000) {
      status = (await rawGet(dash.port, "/api/cluster")).status;
      if (status !== 200) await sleep(200);
    }
    expect(status).toBe(200);
  }, 60_000);
});
