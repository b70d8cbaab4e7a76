import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The machine is shared: compiling a plan takes a few ms, but the first
    // TypeScript load and the end-to-end test's go build take seconds.
    testTimeout: 60_000,
    hookTimeout: 600_000,
  },
});
