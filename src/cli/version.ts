import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The version of the installed package: the nearest `package.json` above this module (the
 * same file from `src/` and from `dist/`, and whatever the package is named on npm).
 *
 * @example
 * ```ts
 * process.stdout.write(`tether ${packageVersion()}\n`); // 'tether 0.1.0'
 * ```
 */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const version = versionIn(join(dir, 'package.json'));
    if (version !== null) return version;
    const parent = dirname(dir);
    if (parent === dir) return '0.0.0';
    dir = parent;
  }
}

function versionIn(path: string): string | null {
  try {
    const pkg = JSON.parse(readFileSync(path, 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : null;
  } catch {
    return null;
  }
}

/**
 * What `--version` prints, on every command.
 *
 * @example
 * ```ts
 * if (values.version) process.stdout.write(versionLine());
 * ```
 */
export function versionLine(): string {
  return `tether ${packageVersion()}\n`;
}
