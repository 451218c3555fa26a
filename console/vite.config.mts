import { defineConfig } from 'vite';

/**
 * The console's build. Vite 8 compiles TSX itself (oxc), so no React plugin is needed: the automatic
 * JSX runtime is configured here. `base` matches where the API serves the build (api/static/console.ts).
 */
export default defineConfig({
  root: new URL('.', import.meta.url).pathname,
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'react' } },
  build: {
    outDir: 'dist',
    target: 'es2022',
    sourcemap: false,
    // Never inline assets as data: URLs: the CSP (img-src 'self') would refuse them (the favicon).
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 1200,
    rolldownOptions: {
      // react-router marks its modules "use client" for React Server Components; meaningless in a SPA bundle.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
  // `npx vite --config console/vite.config.ts` for live reloading against `npm start` on port 3000.
  server: { proxy: { '/v1': 'http://127.0.0.1:3000', '/openapi.json': 'http://127.0.0.1:3000' } },
});
