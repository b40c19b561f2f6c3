import { resolve } from 'node:path';
import { assertArgument } from '../errors.js';
import type { TerminalSpawnSpec } from '../subprocess/types.js';
import { SHELL_RC_ENV } from './shell-protocol.js';
import type { TerminalOpenOptions } from './terminal-types.js';

/**
 * Resolves the spawn spec of an `open` call: interactive bash with our rc (in its env, so a
 * sandboxed shell with a private /tmp gets it too, A3); the env is an
 * overlay the provider applies to its sanitized host env (S1, S3).
 *
 * @example
 * ```ts
 * openSpec({ cols: 80 }, { shell: '/bin/bash', cwd: '/tmp', cleanupGraceMs: 2000 });
 * ```
 */
export function openSpec(
  opts: TerminalOpenOptions,
  defaults: { readonly shell: string; readonly cwd: string; readonly cleanupGraceMs: number },
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
  const argv: [string, ...string[]] = isBash ? [shell, '--noprofile', '--norc', '-i'] : [shell];
  const env = {
    TERM: 'xterm-256color',
    PAGER: 'cat',
    GIT_PAGER: 'cat',
    ...opts.env,
    ...identity,
    ...(isBash ? SHELL_RC_ENV : {}),
  };
  return { argv, cwd, env, cols, rows, cleanupGraceMs: defaults.cleanupGraceMs };
}
