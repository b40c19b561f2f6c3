import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

/** execvp(3)'s search path when the environment has no PATH (glibc). */
const DEFAULT_PATH = '/bin:/usr/bin';

/**
 * Resolves `file` the way execvp(3) will in the PTY child: a name with a slash relative to
 * `cwd`, otherwise through the PATH of `env` (`NAME=value` entries). `null` when nothing
 * executable is found, so that the host can refuse before forking: forkpty's child can only
 * report a failed exec as output and exit code 1.
 *
 * @example
 * ```ts
 * findExecutable('bash', '/tmp', ['PATH=/usr/bin:/bin']); // '/usr/bin/bash'
 * ```
 */
export function findExecutable(file: string, cwd: string, env: readonly string[]): string | null {
  if (file === '') return null;
  if (file.includes('/')) {
    const path = isAbsolute(file) ? file : resolve(cwd, file);
    return isExecutableFile(path) ? path : null;
  }
  const entry = env.find((e) => e.startsWith('PATH='));
  const searchPath = entry === undefined ? DEFAULT_PATH : entry.slice('PATH='.length);
  for (const dir of searchPath.split(delimiter)) {
    // An empty PATH entry means the current directory.
    const path = resolve(cwd, join(dir === '' ? '.' : dir, file));
    if (isExecutableFile(path)) return path;
  }
  return null;
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
