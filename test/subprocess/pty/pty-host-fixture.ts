import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sanitizeEnv } from '../../../src/subprocess/env.js';
import { readProcStat } from '../../../src/subprocess/proc.js';
import {
  createPtyHost,
  type PtyHost,
  type PtyHostOptions,
  type PtySession,
} from '../../../src/subprocess/pty/pty-host.js';

const hosts: PtyHost[] = [];
const dirs: string[] = [];

/** A host disposed by {@link disposeHosts} (call it in afterEach). */
export function testHost(options?: PtyHostOptions): PtyHost {
  const host = createPtyHost(options);
  hosts.push(host);
  return host;
}

export async function disposeHosts(): Promise<void> {
  await Promise.all(hosts.splice(0).map((h) => h.dispose()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** A fresh temporary directory, removed by {@link disposeHosts}. */
export function scratchDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tether-pty-'));
  dirs.push(dir);
  return dir;
}

export const ptyEnv = sanitizeEnv(process.env, {}, { TERM: 'xterm', PS1: '$ ', HISTFILE: '/dev/null' });

/** A session plus everything it printed so far. */
export interface Recorded {
  readonly session: PtySession;
  output(): string;
}

/** Opens `argv` on `host` (cwd: a scratch dir) and records its output. */
export async function openRecorded(
  host: PtyHost,
  argv: readonly [string, ...string[]],
  opts: { cwd?: string; cleanupGraceMs?: number } = {},
): Promise<Recorded> {
  const session = await host.open({
    argv,
    cwd: opts.cwd ?? scratchDir(),
    env: ptyEnv,
    cols: 80,
    rows: 24,
    cleanupGraceMs: opts.cleanupGraceMs ?? 2000,
  });
  let out = '';
  session.onData((text) => {
    out += text;
  });
  return { session, output: () => out };
}

/** An interactive bash without rc files, prompt `$ `. */
export function openBash(host: PtyHost, cwd?: string): Promise<Recorded> {
  return openRecorded(host, ['bash', '--norc', '--noprofile', '-i'], cwd === undefined ? {} : { cwd });
}

/** The pid of the terminal's foreground group when its leader runs `comm`, else null. */
export function foregroundRunning(session: PtySession, comm: string): number | null {
  const tpgid = readProcStat(session.identity.pid)?.tpgid ?? -1;
  if (tpgid <= 0 || tpgid === session.identity.pid) return null;
  return readProcStat(tpgid)?.comm === comm ? tpgid : null;
}

/**
 * Writes `bytes` of a fixed pseudo-random printable pattern (no control characters, so the
 * tty passes it through unchanged) to a file in `dir`; returns its path and content.
 */
export function writePattern(dir: string, bytes: number): { path: string; text: string } {
  const codes = new Uint8Array(bytes);
  let x = 0x2545f491;
  for (let i = 0; i < bytes; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    codes[i] = 33 + ((x >>> 0) % 94);
  }
  const path = join(dir, 'pattern.txt');
  writeFileSync(path, codes);
  return { path, text: Buffer.from(codes).toString('latin1') };
}
