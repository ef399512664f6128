import { VERIFIER_PRELUDE } from "./prelude.js";

/**
 * Adapter that runs a ClawGym-Bench task's own `reward/reward.sh` unchanged and turns it into our verifier contract.
 * ClawGym expects `reward/` inside the workspace and may name the workspace by an absolute path (its
 * `input_mount_dir`, e.g. /root/.openclaw/workspace): the adapter copies `reward/` from the verifier folder into the
 * workspace, rewriting that path to the real workspace in text files, runs `bash reward/reward.sh` (cwd = workspace),
 * takes its last non-empty stdout line (a plain number, or a JSON object with `reward`) as the score, and, when
 * `reward/check.py` exists, runs `python3 reward/check.py <workspace>` for the sub-scores (numbers and booleans).
 * Usage: node clawgym_adapter.cjs [--mount <input_mount_dir>]
 */
export const CLAWGYM_ADAPTER = String.raw`${VERIFIER_PRELUDE}
const cp = require("child_process");
function copyTree(src, dst, mount) {
  fs.mkdirSync(dst, { recursive: true });
  for (const ent of fs.readdirSync(src, { withFileTypes: true })) {
    const s = path.join(src, ent.name);
    const d = path.join(dst, ent.name);
    if (ent.isDirectory()) { copyTree(s, d, mount); continue; }
    let data = fs.readFileSync(s);
    const text = data.toString("utf8");
    if (mount && !text.includes("\u0000") && text.includes(mount)) data = Buffer.from(text.split(mount).join(WS), "utf8");
    fs.writeFileSync(d, data, { mode: fs.statSync(s).mode });
  }
}
function lastLine(out) {
  const lines = String(out || "").split(/\r?\n/).map((l) => l.trim()).filter((l) => l);
  return lines.length ? lines[lines.length - 1] : null;
}
function runShell(args) {
  const opts = { cwd: WS, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 };
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
  const rewardSrc = path.join(__dirname, "reward");
  copyTree(rewardSrc, path.join(WS, "reward"), mount && mount !== "/" ? mount.replace(/\/+$/, "") : undefined);
  const r = runShell(["reward/reward.sh"]);
  const parsed = scoreOf(lastLine(r.stdout));
  let subscores = parsed.extra ? subscoresOf(parsed.extra) : {};
  delete subscores.reward;
  if (fs.existsSync(path.join(WS, "reward", "check.py"))) {
    const c = cp.spawnSync("python3", ["reward/check.py", WS], { cwd: WS, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
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
