import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The path of `build/<name>`, a file the install script compiled (the spawner, the allocator
 * trim), or null when it was not built. One lookup for both layouts: this module runs from
 * `src/subprocess/` (tests) and from `dist/src/subprocess/` (the package).
 *
 * @example
 * ```ts
 * builtFile('tether-spawner'); // '/…/tether-runtime/build/tether-spawner', or null
 * ```
 */
export function builtFile(name: string): string | null {
  for (const rel of [`../../build/${name}`, `../../../build/${name}`]) {
    const path = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(path)) return path;
  }
  return null;
}
