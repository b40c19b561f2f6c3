import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { assertArgument } from '../errors.js';
import type { TerminalSpawnSpec } from '../subprocess/types.js';
import { SHELL_RC } from './shell-protocol.js';
import type { TerminalOpenOptions } from './terminal-types.js';

/**
 * The rc file every terminal's bash starts with (the shell protocol, T7): written on the first
 * `path()`, removed by `remove()` (the service's dispose).
 *
 * @example
 * ```ts
 * const rc = new ShellRcFile();
 * const spec = openSpec({}, defaults, rc.path());
 * rc.remove();
 * ```
 */
export class ShellRcFile {
  #dir: string | null = null;

  path(): string {
    if (this.#dir === null) {
      this.#dir = mkdtempSync(join(tmpdir(), 'tether-rc-'));
      writeFileSync(join(this.#dir, 'bashrc'), SHELL_RC, { mode: 0o600 });
    }
    return join(this.#dir, 'bashrc');
  }

  remove(): void {
    if (this.#dir !== null) rmSync(this.#dir, { recursive: true, force: true });
  }
}

/**
 * Resolves the spawn spec of an `open` call: interactive bash with our rc file; the env is an
 * overlay the provider applies to its sanitized host env (S1, S3).
 *
 * @example
 * ```ts
 * openSpec({ cols: 80 }, { shell: '/bin/bash', cwd: '/tmp', cleanupGraceMs: 2000 }, rc.path());
 * ```
 */
export function openSpec(
  opts: TerminalOpenOptions,
  defaults: { readonly shell: string; readonly cwd: string; readonly cleanupGraceMs: number },
  rcFile: string,
  identity: Readonly<Record<string, string>> = {},
): TerminalSpawnSpec {
  assertArgument(typeof opts === 'object' && opts !== null, 'open options must be an object');
  assertArgument(
    opts.hidden === undefined || typeof opts.hidden === 'boolean',
    `hidden must be a boolean, got ${typeof opts.hidden}`,
  );
  const shell = opts.shell ?? defaults.shell;
  assertArgument(
    opts.cwd === undefined || (typeof opts.cwd === 'string' && opts.cwd.length > 0),
    'cwd must be a non-empty path',
  );
  // A relative cwd is relative to the runtime's cwd, never to this process's.
  const cwd = opts.cwd === undefined ? defaults.cwd : resolve(defaults.cwd, opts.cwd);
  const cols = opts.cols ?? 120;
  const rows = opts.rows ?? 40;
  assertArgument(typeof shell === 'string' && shell.length > 0, 'shell must be a non-empty path');
  assertArgument(
    Number.isSafeInteger(cols) && cols > 0 && cols <= 1000,
    `cols must be an integer in 1..1000, got ${cols}`,
  );
  assertArgument(
    Number.isSafeInteger(rows) && rows > 0 && rows <= 1000,
    `rows must be an integer in 1..1000, got ${rows}`,
  );
  const isBash = /(^|\/)bash$/.test(shell);
  const argv: [string, ...string[]] = isBash ? [shell, '--noprofile', '--rcfile', rcFile, '-i'] : [shell];
  const env = { TERM: 'xterm-256color', PAGER: 'cat', GIT_PAGER: 'cat', ...opts.env, ...identity };
  return { argv, cwd, env, cols, rows, cleanupGraceMs: defaults.cleanupGraceMs };
}
