import { defineConfig, type Plugin } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

/**
 * `<link rel="modulepreload">` in index.html for chunks the app imports dynamically right after
 * it starts (the Markdown renderer, src/lib/chat/markdown-lazy.ts): they download beside the
 * entry chunk instead of after it, and are not part of the entry's start-up work.
 */
function preloadLazy(modules: string[]): Plugin {
  return {
    name: 'gatehouse-preload-lazy',
    apply: 'build',
    transformIndexHtml: {
      order: 'post',
      handler(_html, ctx) {
        const files = Object.values(ctx.bundle ?? {})
          .filter((c) => c.type === 'chunk' && !!c.facadeModuleId && modules.some((m) => c.facadeModuleId!.endsWith(m)))
          .map((c) => c.fileName);
        return files.map((f) => ({ tag: 'link', attrs: { rel: 'modulepreload', crossorigin: '', href: `/${f}` }, injectTo: 'head' as const }));
      },
    },
  };
}

// Static single-page app: the edge serves dist/ (index.html for app routes, fingerprinted files
// under assets/). No CDN, no remote fonts: everything the page loads comes from this build.
export default defineConfig({
  base: '/',
  plugins: [svelte(), preloadLazy(['/src/lib/chat/markdown.ts'])],
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    emptyOutDir: true,
    sourcemap: false,
    // The entry chunk holds the chat page with TipTap/ProseMirror; other pages (routes.ts), the
    // Markdown renderer and highlight.js languages are chunks of their own.
    chunkSizeWarningLimit: 1024,
    rolldownOptions: {
      output: {
        // The typed API modules (src/lib/apis, a few hundred bytes each) are shared by the lazy
        // pages; left to the default splitting, each became a request of its own (one of 82 bytes).
        codeSplitting: { groups: [{ name: 'api', test: /[\\/]src[\\/]lib[\\/]apis[\\/]/ }] },
      },
    },
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
