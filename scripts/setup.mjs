#!/usr/bin/env node
// Installs what harnessrl needs on a fresh Debian machine: system packages (bubblewrap, Debian's PyTorch with
// OpenBLAS) and npm packages. Idempotent and quiet when everything is present. Plain Node, no dependencies.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const DEBIAN_PACKAGES = ["bubblewrap", "python3-torch", "libopenblas0-pthread", "chromium", "postgresql", "redis-server"];

function log(msg) {
  process.stderr.write(`[setup] ${msg}\n`);
}

function debianMissing() {
  return DEBIAN_PACKAGES.filter((p) => {
    const r = spawnSync("dpkg-query", ["-W", "-f=${Status}", p], { encoding: "utf8" });
    return r.status !== 0 || !r.stdout.includes("install ok installed");
  });
}

function installDebian() {
  if (!existsSync("/usr/bin/dpkg-query")) {
    log("not a Debian system: install bubblewrap and PyTorch (python3 with torch) yourself");
    return;
  }
  const missing = debianMissing();
  if (missing.length === 0) return;
  const asRoot = process.getuid?.() === 0;
  const prefix = asRoot ? [] : ["sudo", "-n"];
  log(`installing Debian packages: ${missing.join(" ")}`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const run = (args) => {
    const [cmd, ...rest] = [...prefix, ...args];
    const r = spawnSync(cmd, rest, { stdio: ["ignore", "ignore", "inherit"], env });
    if (r.status !== 0) throw new Error(`"${args.join(" ")}" failed (exit ${r.status}); run it as root`);
  };
  run(["apt-get", "update", "-qq"]);
  run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", ...missing]);
}

function installNpm() {
  const lock = join(root, "package-lock.json");
  const stamp = join(root, "node_modules", ".harnessrl-lock-hash");
  const hash = createHash("sha256").update(readFileSync(lock)).digest("hex");
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === hash) return;
  log("installing npm packages (npm ci)");
  execFileSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
  writeFileSync(stamp, hash);
}

try {
  installDebian();
  installNpm();
} catch (e) {
  log(e instanceof Error ? e.message : String(e));
  process.exit(1);
}
