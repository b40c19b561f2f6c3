import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { TetherError } from '../errors.js';

let helper: { source: Buffer; hash: string } | null = null;

/**
 * The helper's source and version (the hash of its source: a changed helper is uploaded under a
 * new name). Read once, on the first connect: beside this module in src/, or from dist/src/remote/
 * back in the package's src/remote/.
 */
function helperSource(): { source: Buffer; hash: string } {
  if (helper !== null) return helper;
  for (const rel of ['./tether-helper.py', '../../../src/remote/tether-helper.py']) {
    try {
      const source = readFileSync(new URL(rel, import.meta.url));
      helper = { source, hash: createHash('sha256').update(source).digest('hex').slice(0, 16) };
      return helper;
    } catch {}
  }
  throw new TetherError(
    'PROVIDER_UNAVAILABLE',
    'tether-helper.py is missing from the package; reinstall tether-runtime',
  );
}

// Reads exactly the helper's bytes from stdin, stores it once under its hash, then runs it. The
// directory may start with `~` (an exec transport has no shell to expand $HOME).
const BOOTSTRAP = [
  'import os,sys',
  'if sys.version_info<(3,8):sys.stderr.write("TETHER-MISSING python3 >= 3.8 (found %s)\\n"%sys.version.split()[0]);sys.exit(4)',
  'd,h,n=os.path.expanduser(sys.argv[1]),sys.argv[2],int(sys.argv[3]);b=bytearray()',
  'while len(b)<n:',
  ' c=os.read(0,n-len(b))',
  ' if not c:sys.exit(5)',
  ' b+=c',
  'os.makedirs(d,0o700,exist_ok=True);f=os.path.join(d,"tether-helper-"+h+".py")',
  'if not os.path.exists(f):t=f+".%d"%os.getpid();open(t,"wb").write(b);os.rename(t,f)',
  'os.execv(sys.executable,[sys.executable,"-u",f,"connect",d])',
].join('\n');

/**
 * The words that start the helper on a host: `python3 -c <bootstrap> DIR HASH LENGTH`. The helper
 * itself then follows on stdin (see {@link bootstrapHelper}); it is stored once per version.
 *
 * @example
 * ```ts
 * spawn('podman', ['exec', '-i', 'c1', ...helperArgv('~/.cache/tether')]);
 * ```
 */
export function helperArgv(dir: string): string[] {
  const { source, hash } = helperSource();
  return ['python3', '-c', BOOTSTRAP, dir, hash, String(source.length)];
}

/** What a started helper command gives {@link bootstrapHelper}. */
export interface BootstrapIo {
  /** Bytes to and from the helper command (its stdin and stdout). */
  readonly stream: Duplex;
  /** Where it runs, for messages (`ci@build-1:22`, `podman:c1`). */
  readonly at: string;
  /** Its stderr so far. */
  stderr(): string;
  /** Resolves with its exit code (null when a signal ended it) if it ends before greeting. */
  readonly exited: Promise<number | null>;
}

/**
 * Uploads the helper over a just-started `helperArgv` command and waits for its greeting line;
 * resolves with the bytes that followed it (the first frames) and leaves the stream paused.
 * A command that ends first, or answers something else, is PROVIDER_UNAVAILABLE saying what is
 * missing on the host.
 *
 * @example
 * ```ts
 * const leftover = await bootstrapHelper({ stream, at: 'podman:c1', stderr, exited });
 * ```
 */
export function bootstrapHelper(io: BootstrapIo): Promise<Buffer> {
  const { stream, at } = io;
  return new Promise((resolve, reject) => {
    let settled = false;
    let greeting = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      greeting = Buffer.concat([greeting, chunk]);
      const eol = greeting.indexOf(10);
      if (eol < 0 || settled) return;
      settled = true;
      stream.off('data', onData);
      stream.pause();
      const line = greeting.subarray(0, eol).toString();
      if (!line.startsWith('TETHER-HELPER ')) {
        reject(
          new TetherError('PROVIDER_UNAVAILABLE', `the helper on ${at} answered ${JSON.stringify(line)}`),
        );
        return;
      }
      resolve(greeting.subarray(eol + 1));
    };
    void io.exited.then((code) => {
      if (settled) return;
      settled = true;
      stream.off('data', onData);
      const stderr = io.stderr();
      const missing = /TETHER-MISSING (.*)/.exec(stderr)?.[1];
      const what =
        missing !== undefined
          ? `${missing} not found on ${at}`
          : code === 127 || /python3.*(not found|no such file)/i.test(stderr)
            ? `python3 >= 3.8 not found on ${at} (the remote helper needs it in the PATH)`
            : `the remote helper on ${at} did not start (exit ${code}): ${stderr.trim() || 'no message'}`;
      reject(
        new TetherError(
          'PROVIDER_UNAVAILABLE',
          `${what}; install python3 >= 3.8 there or fix the helper directory`,
        ),
      );
    });
    stream.on('data', onData);
    stream.write(helperSource().source, () => {});
  });
}
