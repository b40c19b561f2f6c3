import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { dirname, resolve } from 'node:path';
import type { PtyOpenRequest } from '../src/subprocess/pty/pty-protocol.js';

/** The part of node-pty's native unix module we use (node-pty 1.1.0, `src/unix/pty.cc`). */
interface UnixPtyNative {
  fork(
    file: string,
    args: readonly string[],
    env: readonly string[],
    cwd: string,
    cols: number,
    rows: number,
    uid: number,
    gid: number,
    utf8: boolean,
    helperPath: string,
    onExit: (exitCode: number, signal: number) => void,
  ): ForkedPty;
  resize(fd: number, cols: number, rows: number): void;
}

/** What to fork: the open request's parameters (`env` is the complete environment as `NAME=value` entries). */
export type PtyForkSpec = Omit<PtyOpenRequest, 'type' | 'id'>;

/** A forked leader: the master fd (non-blocking), the leader's pid and the slave's path. */
export interface ForkedPty {
  readonly fd: number;
  readonly pid: number;
  readonly pty: string;
}

let loaded: { native: UnixPtyNative; helperPath: string } | undefined;

// Loaded on first use, and only here: node-pty is not thread-safe, so only the host worker loads it.
function nodePty(): { native: UnixPtyNative; helperPath: string } {
  if (loaded) return loaded;
  const require = createRequire(import.meta.url);
  const utilsPath = require.resolve('node-pty/lib/utils.js');
  const utils = require(utilsPath) as { loadNativeModule(name: string): { dir: string; module: unknown } };
  const { dir, module } = utils.loadNativeModule('pty');
  // As node-pty's unixTerminal.js: the spawn helper (used on macOS) sits beside pty.node.
  loaded = { native: module as UnixPtyNative, helperPath: resolve(dirname(utilsPath), dir, 'spawn-helper') };
  return loaded;
}

/**
 * node-pty's native fork: forkpty(3) with its termios (UTF-8), exec in the child, and a native
 * thread that waitpid()s the leader and calls `onExit(exitCode, signalNumber)` on this thread's
 * loop. `onExit` must never throw: node-pty turns a JS exception there into a C++ one, which
 * aborts the process. Throws when forkpty fails.
 *
 * @example
 * ```ts
 * const { fd, pid, pty } = forkPty({ file: 'bash', args: [], cwd: '/', env: ['PATH=/bin'], cols: 80, rows: 24 }, onExit);
 * ```
 */
export function forkPty(spec: PtyForkSpec, onExit: (exitCode: number, signal: number) => void): ForkedPty {
  const { native, helperPath } = nodePty();
  const { file, args, env, cwd, cols, rows } = spec;
  return native.fork(file, args, env, cwd, cols, rows, -1, -1, true, helperPath, onExit);
}

/**
 * TIOCSWINSZ on a master fd (the kernel sends SIGWINCH to the foreground group).
 *
 * @example
 * ```ts
 * resizePty(fd, 120, 40);
 * ```
 */
export function resizePty(fd: number, cols: number, rows: number): void {
  nodePty().native.resize(fd, cols, rows);
}

const signalNames = new Map<number, NodeJS.Signals>(
  Object.entries(constants.signals).map(([name, n]) => [n, name as NodeJS.Signals]),
);

/**
 * The name of a signal number as waitpid reported it (`null` for 0 or an unknown number).
 *
 * @example
 * ```ts
 * signalName(9); // 'SIGKILL'
 * ```
 */
export function signalName(signo: number): NodeJS.Signals | null {
  return signo === 0 ? null : (signalNames.get(signo) ?? null);
}
