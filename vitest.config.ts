import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    globalSetup: ["test/setup/build.ts"],
    // Registries start empty (nothing registers on import): every test file gets the built-ins, as the CLI does.
    setupFiles: ["test/setup/builtins.ts"],
    // Two cores: the suite is mostly I/O-bound servers and sandboxes, two workers keep it honest.
    maxWorkers: 2,
    reporters: process.env.CI ? ["default"] : ["default"],
  },
});
