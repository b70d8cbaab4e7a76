import { defineConfig } from 'vite'
import react from '@vitejs/plugin-react'

// The build is committed (internal/frontend/webui/dist) and compared with a fresh
// one by `make ui-check`, so it must not depend on time or machine.
export default defineConfig({
  base: '/ui/',
  plugins: [react()],
  build: {
    outDir: '../internal/frontend/webui/dist',
    emptyOutDir: true,
    sourcemap: false,
    assetsDir: 'assets',
  },
})
