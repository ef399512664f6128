import type { Series } from "./metrics.js";

export interface ChartGroup {
  /** Stable id (used for anchors). */
  id: string;
  title: string;
  series: Series[];
}

/**
 * Named groups for the metrics the training loop writes; everything else groups by its name without the last `/`
 * segment (`eval/pass1/codex` → `eval/pass1`, `bandit/prob/pi` → `bandit/prob`), and a name without `/` is its own
 * group. First matching rule wins.
 */
const RULES: { id: string; title: string; test: (name: string) => boolean }[] = [
  { id: "reward", title: "Reward", test: (n) => n === "reward" || n.startsWith("reward/") },
  { id: "pass1", title: "pass@1 per harness", test: (n) => n === "pass1" || n.startsWith("pass1/") || n.startsWith("pass@1") },
  { id: "kl-mismatch", title: "KL / train–inference mismatch", test: (n) => /^(kl|mismatch)(\/|_|$)/.test(n) || n === "ref_kl" },
  { id: "clip", title: "Clipping", test: (n) => /^(clip_frac|clip_fraction|is_limited_frac|is_limited_fraction)$/.test(n) },
  { id: "entropy", title: "Entropy", test: (n) => n === "entropy" || n.startsWith("entropy/") || n === "entropy_mean" },
  // Tokens/s and rollouts/s differ by orders of magnitude: separate charts keep both readable.
  { id: "throughput-tokens", title: "Throughput (tokens/s)", test: (n) => /tokens?_per_s(ec)?$/.test(n) },
  { id: "throughput", title: "Throughput", test: (n) => /_per_s$|per_sec$|^throughput(\/|$)/.test(n) },
  { id: "loss", title: "Loss", test: (n) => n === "loss" || n.startsWith("loss/") || n === "value_loss" },
  { id: "grad-norm", title: "Gradient norm", test: (n) => n === "grad_norm" || n.startsWith("grad_norm/") },
  // The warm start's curve (x = its optimizer step); its learning rate is orders of magnitude below the NLL.
  { id: "sft-nll", title: "Warm start: SFT NLL per token", test: (n) => n.startsWith("sft/nll") },
  { id: "sft-lr", title: "Warm start: learning rate", test: (n) => n === "sft/lr" },
  { id: "sft-demo-prob", title: "Warm start: probability of reproducing a demonstration, and of opening its calls as it did", test: (n) => n === "sft/demo_prob" || n === "sft/demo_opening_prob" },
  { id: "sft-held-in-pass1", title: "Warm start: held-in pass@1 (stop_at_pass_rate checks)", test: (n) => n === "sft/held_in_pass1" },
];

function slug(s: string): string {
  return s.replace(/[^A-Za-z0-9_-]+/g, "-").replace(/^-+|-+$/g, "") || "group";
}

export function groupSeries(series: readonly Series[]): ChartGroup[] {
  const groups = new Map<string, ChartGroup>();
  const add = (key: string, title: string, s: Series): void => {
    const g = groups.get(key);
    if (g) g.series.push(s);
    else groups.set(key, { id: key, title, series: [s] });
  };
  for (const s of series) {
    const rule = RULES.find((r) => r.test(s.name));
    if (rule) {
      add(rule.id, rule.title, s);
      continue;
    }
    const cut = s.name.lastIndexOf("/");
    const key = cut > 0 ? s.name.slice(0, cut) : s.name;
    add(`metric:${key}`, key, s);
  }
  // Known groups first in rule order, then the rest alphabetically; anchors made unique after slugging.
  const order = new Map(RULES.map((r, i) => [r.id, i]));
  const sorted = [...groups.values()].sort((a, b) => (order.get(a.id) ?? 1e9) - (order.get(b.id) ?? 1e9) || a.title.localeCompare(b.title));
  const used = new Set<string>();
  for (const g of sorted) {
    const base = order.has(g.id) ? g.id : `m-${slug(g.title)}`;
    let id = base;
    for (let i = 2; used.has(id); i++) id = `${base}-${i}`;
    used.add(id);
    g.id = id;
  }
  return sorted;
}
