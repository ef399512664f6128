import { VERIFIER_PRELUDE } from "./prelude.js";

/** Verifier-folder file listing the task's own reward files (the adapter installs exactly these, nothing else). */
export const CLAWGYM_MANIFEST = "clawgym_reward.json";

/**
 * Adapter that runs a ClawGym-Bench task's own `reward/reward.sh` unchanged and turns it into our verifier contract.
 * ClawGym expects `reward/` inside the workspace and may name the workspace by an absolute path (its
 * `input_mount_dir`, e.g. /root/.openclaw/workspace): the adapter copies `reward/` from the verifier folder into the
 * workspace, rewriting that path to the real workspace in text files, runs `bash reward/reward.sh` (cwd = workspace),
 * takes its last non-empty stdout line (a plain number, or a JSON object with `reward`) as the score, and, when
 * `reward/check.py` exists, runs `python3 reward/check.py <workspace>` for the sub-scores (numbers and booleans).
 *
 * The workspace was written by the sandboxed agent, so nothing in it may steer the grading:
 * - the workspace's `reward/` (files the agent planted: a fake reward.sh, a `json.py` that would shadow the standard
 *   library for check.py, stale `__pycache__`) is deleted whole (a symlink is removed, not followed) and rebuilt from
 *   the files the manifest lists, so only the task's own grader runs;
 * - the grader gets a clean environment: the sandbox's PATH, a fresh empty HOME and TMPDIR, `PYTHONNOUSERSITE` (the
 *   agent could have written `usercustomize.py` or a `.pth` file into its own HOME's user site-packages, which Python
 *   would run at start-up and could print a score last), and none of PYTHONPATH, PYTHONSTARTUP, BASH_ENV, ENV.
 * The agent's processes are gone by then (the sandbox kills every leftover when the harness exits).
 * Usage: node clawgym_adapter.cjs [--mount <input_mount_dir>]
 */
export const CLAWGYM_ADAPTER = String.raw`${VERIFIER_PRELUDE}
const cp = require("child_process");
const os = require("os");
function installReward(mount) {
  const dst = path.join(WS, "reward");
  fs.rmSync(dst, { recursive: true, force: true });
  const files = JSON.parse(fs.readFileSync(path.join(__dirname, "${CLAWGYM_MANIFEST}"), "utf8")).files;
  for (const rel of files) {
    if (typeof rel !== "string" || rel.split("/").some((s) => s === "" || s === "." || s === "..")) throw new Error("bad reward path in manifest: " + rel);
    let data = fs.readFileSync(path.join(__dirname, "reward", rel));
    const text = data.toString("utf8");
    if (mount && !text.includes("\u0000") && text.includes(mount)) data = Buffer.from(text.split(mount).join(WS), "utf8");
    fs.mkdirSync(path.dirname(path.join(dst, rel)), { recursive: true });
    fs.writeFileSync(path.join(dst, rel), data, { mode: 0o755 });
  }
}
// The grader's HOME and TMPDIR are removed when the adapter exits: in a sandbox its /tmp goes with it, but the
// adapter also runs on hosts (tests, a user checking a task) where each run would otherwise leave two folders.
const scratch = [];
process.on("exit", () => { for (const d of scratch) { try { fs.rmSync(d, { recursive: true, force: true }); } catch (e) { /* best effort */ } } });
function cleanEnv() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "clawgym-home-"));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "clawgym-tmp-"));
  scratch.push(home, tmp);
  return {
    PATH: process.env.PATH || "/usr/local/bin:/usr/bin:/bin", HOME: home, TMPDIR: tmp, LANG: "C.UTF-8", LC_ALL: "C.UTF-8",
    PYTHONNOUSERSITE: "1", PYTHONDONTWRITEBYTECODE: "1", PYTHONIOENCODING: "utf-8",
  };
}
function lastLine(out) {
  const lines = String(out || "").split(/\r?\n/).map((l) => l.trim()).filter((l) => l);
  return lines.length ? lines[lines.length - 1] : null;
}
function runShell(args, env) {
  const opts = { cwd: WS, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 };
  let r = cp.spawnSync("bash", args, opts);
  if (r.error && r.error.code === "ENOENT") r = cp.spawnSync("sh", args, opts);
  return r;
}
function scoreOf(line) {
  if (line === null) return { error: "reward.sh printed nothing" };
  if (/^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/.test(line)) return { score: Number(line) };
  try {
    const v = JSON.parse(line);
    if (typeof v === "number") return { score: v };
    if (v && typeof v.reward === "number") return { score: v.reward, extra: v };
  } catch (e) { /* fall through */ }
  return { error: "reward.sh's last line is not a score: " + line.slice(0, 200) };
}
function subscoresOf(value) {
  const out = {};
  if (!value || typeof value !== "object" || Array.isArray(value)) return out;
  for (const k of Object.keys(value)) {
    const v = value[k];
    if (typeof v === "number" && Number.isFinite(v)) out[k] = v;
    else if (typeof v === "boolean") out[k] = v ? 1 : 0;
  }
  return out;
}
run(() => {
  const i = process.argv.indexOf("--mount");
  const mount = i >= 0 ? process.argv[i + 1] : undefined;
  installReward(mount && mount !== "/" ? mount.replace(/\/+$/, "") : undefined);
  const env = cleanEnv();
  const r = runShell(["reward/reward.sh"], env);
  const parsed = scoreOf(lastLine(r.stdout));
  let subscores = parsed.extra ? subscoresOf(parsed.extra) : {};
  delete subscores.reward;
  if (fs.existsSync(path.join(WS, "reward", "check.py"))) {
    const c = cp.spawnSync("python3", ["reward/check.py", WS], { cwd: WS, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    const line = lastLine(c.stdout);
    try { subscores = Object.assign(subscoresOf(line === null ? null : JSON.parse(line)), subscores); } catch (e) { /* no sub-scores */ }
  }
  if (parsed.error !== undefined) {
    const why = r.status !== 0 ? " (exit " + r.status + ": " + String(r.stderr || "").trim().slice(-300) + ")" : "";
    emit(0, subscores, parsed.error + why);
    return;
  }
  if (!(parsed.score >= 0 && parsed.score <= 1)) { emit(0, subscores, "reward.sh score out of [0, 1]: " + parsed.score); return; }
  emit(parsed.score, subscores, r.status !== 0 ? "reward.sh exited " + r.status : undefined);
});
`;
