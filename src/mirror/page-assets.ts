import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const TYPES: Readonly<Record<string, string>> = {
  '/': 'text/html; charset=utf-8',
  '/app.js': 'text/javascript; charset=utf-8',
  '/app.css': 'text/css; charset=utf-8',
};
const FILES: Readonly<Record<string, string>> = {
  '/': 'index.html',
  '/app.js': 'app.js',
  '/app.css': 'app.css',
};

// The page ships as plain files in src/mirror/page (no bundler, no CDN: V4); from dist/ the
// package's src/ copy is used (package.json `files` includes src).
function pageDir(): string {
  const beside = fileURLToPath(new URL('./page/', import.meta.url));
  return existsSync(beside) ? beside : fileURLToPath(new URL('../../../src/mirror/page/', import.meta.url));
}

const cache = new Map<string, Buffer>();

/**
 * The bundled page's file for a request path, or null.
 *
 * @example
 * ```ts
 * pageAsset('/app.js')?.type; // 'text/javascript; charset=utf-8'
 * ```
 */
export function pageAsset(pathname: string): { readonly type: string; readonly body: Buffer } | null {
  const file = FILES[pathname];
  const type = TYPES[pathname];
  if (file === undefined || type === undefined) return null;
  let body = cache.get(file);
  if (body === undefined) {
    body = readFileSync(`${pageDir()}${file}`);
    cache.set(file, body);
  }
  return { type, body };
}
