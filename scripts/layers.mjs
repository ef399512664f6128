// The layer map of src/: ONE table, read by eslint.config.js (which turns it into per-folder
// `no-restricted-imports` rules) and by test/core/layers.test.ts (which checks it against src/ and
// docs/architecture.md). The rule: a module may import any lower layer; from its own layer only the folders
// its entry lists in `uses`; never a higher layer.

/**
 * Top-level entries of src/ (folders, and `builtins` = src/builtins.ts), by layer.
 * Responsibilities are in the Folders table of docs/architecture.md.
 * @type {Record<string, { layer: number, uses?: string[] }>}
 */
export const LAYERS = {
  core: { layer: 1 },
  tokenizer: { layer: 2 },
  chat: { layer: 3 },
  icr: { layer: 4 },
  weights: { layer: 4 },
  gguf: { layer: 4, uses: ["weights"] },
  model: { layer: 4, uses: ["weights"] },
  engine: { layer: 5 },
  store: { layer: 5 },
  history: { layer: 5, uses: ["store"] },
  trees: { layer: 5, uses: ["store"] },
  batch: { layer: 5, uses: ["trees"] },
  advantage: { layer: 5, uses: ["batch", "trees", "tasks"] },
  sandbox: { layer: 5 },
  tasks: { layer: 5 },
  harness: { layer: 5 },
  trainer: { layer: 5, uses: ["batch"] },
  schedule: { layer: 5 },
  eval: { layer: 5, uses: ["tasks"] },
  export: { layer: 5, uses: ["store", "trees"] },
  report: { layer: 5 },
  proxy: { layer: 6 },
  rollout: { layer: 6, uses: ["proxy"] },
  cluster: { layer: 6, uses: ["rollout", "proxy"] },
  // Reads runs through store, trees, advantage and report (all layer 5); nothing below imports it.
  dashboard: { layer: 6 },
  // The run context is built from train's config schema and handed to train's orchestrator.
  train: { layer: 7, uses: ["run"] },
  run: { layer: 7, uses: ["train"] },
  bench: { layer: 7, uses: ["builtins", "train", "run"] },
  builtins: { layer: 7 },
  cli: { layer: 8 },
};

/**
 * Temporary exceptions, each with its reason. Files matching `files` may also import `allow`.
 * @type {{ files: string[], folder: string, allow: string[], why: string }[]}
 */
export const ALLOWANCES = [];

/** Folders `name` must not import: higher layers, and same-layer folders outside its `uses`. */
export function forbiddenFor(name, extraAllowed = []) {
  const self = LAYERS[name];
  if (!self) throw new Error(`layers: unknown entry ${name}`);
  const allowed = new Set([name, ...(self.uses ?? []), ...extraAllowed]);
  return Object.entries(LAYERS)
    .filter(([other, { layer }]) => !allowed.has(other) && layer >= self.layer)
    .map(([other]) => other);
}

/** Nesting depths checked: src/x/a.ts is depth 1, src/x/y/a.ts depth 2, … (src/builtins.ts is depth 0). */
const MAX_DEPTH = 6;

/** Files of entry `name` at exactly `depth`, as a glob. */
function filesAt(name, depth) {
  return depth === 0 ? `src/${name}.ts` : `src/${name}/${"*/".repeat(depth - 1)}*.ts`;
}

/**
 * The `no-restricted-imports` rule for files of `name` at `depth`: relative specifiers that climb exactly to src/ and
 * enter a forbidden entry (a file at depth 2 writing `../x` stays inside its own folder, so depth matters).
 */
function ruleFor(name, depth, extraAllowed) {
  const forbidden = forbiddenFor(name, extraAllowed);
  if (forbidden.length === 0) return "off";
  const climb = depth === 0 ? "\\./" : `(?:\\.\\./){${depth}}`;
  const uses = LAYERS[name].uses ?? [];
  const also = [...uses, ...extraAllowed];
  const message = `src/${name} is layer ${LAYERS[name].layer}: it may import lower layers${also.length ? ` and ${also.join(", ")}` : ""} only (layer map: docs/architecture.md, scripts/layers.mjs).`;
  return ["error", { patterns: [{ regex: `^${climb}(?:${forbidden.join("|")})(?:/|\\.js$|$)`, message }] }];
}

/** ESLint flat-config blocks enforcing the table (files nested deeper than MAX_DEPTH under src/ are not checked). */
export function layerConfigs() {
  const blocks = [];
  for (const name of Object.keys(LAYERS)) {
    const depths = name === "builtins" ? [0] : Array.from({ length: MAX_DEPTH }, (_, i) => i + 1);
    for (const depth of depths) {
      blocks.push({ files: [filesAt(name, depth)], rules: { "no-restricted-imports": ruleFor(name, depth, []) } });
      // A nested array means "all of these globs match": the allowance's files at this depth.
      for (const a of ALLOWANCES.filter((x) => x.folder === name)) {
        for (const glob of a.files) blocks.push({ files: [[filesAt(name, depth), glob]], rules: { "no-restricted-imports": ruleFor(name, depth, a.allow) } });
      }
    }
  }
  return blocks;
}
