import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

// Django serves index.html at /app/ (and every deep link under /app/*) and the
// hashed bundle under /app/assets/, so every URL the build writes starts with /app/.
export default defineConfig({
  base: "/app/",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 700,
  },
  server: {
    // The starter specs live in ../examples/specs and are bundled by import.meta.glob.
    fs: { allow: [".."] },
    // /v2/ is the model server (`make run` on port 8000 starts it on 8090), as the front routes it;
    // the Host stays the page's, so the session's Origin check passes (docs/subsystems/serving.md).
    proxy: {
      "/api": "http://127.0.0.1:8000",
      "/v2": "http://127.0.0.1:8090",
    },
  },
  test: {
    include: ["src/**/*.test.ts", "src/**/*.test.tsx"],
    environment: "node",
  },
});
