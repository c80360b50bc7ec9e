import { defineConfig } from 'vite';

// Preact's JSX through Vite's own transformer (oxc): no Babel, no plugin.
// The built files are served by the broker under /ui/ (index.html and hashed assets/*).
export default defineConfig({
  base: '/ui/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  // npm run dev: the page from Vite with hot reload, its API from a broker on the default admin listener
  server: { proxy: { '/api': process.env.VARVE_ADMIN || 'http://127.0.0.1:9644' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // the broker serves what is built: no source maps in the jar
    sourcemap: false,
    chunkSizeWarningLimit: 200,
  },
});
