import { assertArgument } from './errors.js';

/**
 * The URL of a compiled worker entry point, `workers/<name>.js` of the build output.
 *
 * Built, this module runs from `dist/src/worker-url.js`, and the worker sits beside it in
 * `dist/workers/`. Under vitest it runs from `src/worker-url.ts`; worker threads cannot load
 * TypeScript, so the URL points at `<project>/dist/workers/` (tests run after `npm run build`).
 *
 * @example
 * ```ts
 * const pool = new Piscina({ filename: workerUrl('spill-worker').href });
 * ```
 */
export function workerUrl(name: string): URL {
  assertArgument(
    /^[a-z0-9][a-z0-9-]*$/.test(name),
    `worker name must be kebab-case, got ${JSON.stringify(name)}`,
  );
  const fromSource = import.meta.url.endsWith('.ts');
  return new URL(fromSource ? `../dist/workers/${name}.js` : `../workers/${name}.js`, import.meta.url);
}
