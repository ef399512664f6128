import js from "@eslint/js";
import tseslint from "typescript-eslint";
import { layerConfigs } from "./scripts/layers.mjs";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "runs/**", ".cache/**", "worker/**", "**/*.mjs", "**/*.cjs"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "no-constant-condition": ["error", { checkLoops: false }],
      "max-lines": ["error", { max: 700, skipBlankLines: true, skipComments: true }],
      // ChildProcess.kill(signal) on a child whose spawn failed can be kill(0, signal): our own process group.
      "no-restricted-syntax": [
        "error",
        {
          selector: "CallExpression[callee.type='MemberExpression'][callee.property.name='kill'][callee.object.name!='process'][arguments.length=1]",
          message: "Signal a child process with killChild (src/core/kill-child.ts): a kill() after a failed spawn signals our own process group.",
        },
      ],
    },
  },
  { files: ["src/core/kill-child.ts"], rules: { "no-restricted-syntax": "off" } },
  // The dashboard's browser client: plain ES modules run by the browser, uPlot loaded before them.
  {
    files: ["src/dashboard/static/**/*.js", "src/report/static/**/*.js"],
    languageOptions: {
      sourceType: "module",
      globals: Object.fromEntries(["window", "document", "location", "history", "fetch", "EventSource", "URL", "URLSearchParams", "console", "setTimeout", "clearTimeout", "requestAnimationFrame", "ResizeObserver", "Intl", "Node", "HashChangeEvent", "uPlot"].map((g) => [g, "readonly"])),
    },
  },
  // The layer map (docs/architecture.md): importing against it fails lint.
  ...layerConfigs(),
);
