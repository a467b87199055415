import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

// Static single-page app: the edge serves dist/ (index.html for app routes, fingerprinted files
// under assets/). No CDN, no remote fonts: everything the page loads comes from this build.
export default defineConfig({
  base: '/',
  plugins: [svelte()],
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    emptyOutDir: true,
    sourcemap: false,
    // One app chunk with TipTap/ProseMirror (~122 KB gzipped alone) and marked; highlight.js
    // languages load on demand. Over Vite's 500 KB default, on purpose.
    chunkSizeWarningLimit: 1024,
  },
  server: {
    port: 5173,
    // `pnpm dev`: the API lives on the edge (:8080).
    proxy: {
      '/api': 'http://127.0.0.1:8080',
      '/health': 'http://127.0.0.1:8080',
    },
  },
});
