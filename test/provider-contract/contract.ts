import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TetherError } from '../../src/errors.js';
import type {
  InputProbe,
  SubprocessHandle,
  SubprocessProvider,
  SubprocessSpawnSpec,
  TerminalHandle,
  TerminalSpawnSpec,
} from '../../src/subprocess/types.js';

/**
 * One provider under test, made fresh for every test. Everything the suite checks goes through
 * `provider`; what only the machine hosting the processes can see is an optional `host`.
 */
export interface ProviderUnderTest {
  readonly provider: SubprocessProvider;
  /** A directory that exists where the provider runs processes. */
  readonly cwd: string;
  /**
   * Whether the provider proves input waits (T6). `true`: `read x` and `input()` must be proven
   * waiting. `false`: every probe must answer `unknown` or `waiting: false`, never a proof.
   */
  readonly provesInput: boolean;
  /**
   * Whether a leader may hold fds beyond 0, 1 and 2 that the host process inherited without
   * close-on-exec: only `child_process` (libuv closes nothing it did not open), which the runtime
   * uses once its spawner died. Default false.
   */
  readonly passesHostFds?: boolean;
  /** Host-side extra check: live pids that carry `treeId`'s marker (e.g. the local /proc). */
  readonly host?: { livePids(treeId: string): readonly number[] };
  /** Releases what the factory made (called after every handle of the test was killed). */
  dispose(): Promise<void>;
}

/** Makes the provider under test; the suite calls it once per test. */
export type ProviderFactory = () => ProviderUnderTest | Promise<ProviderUnderTest>;

// Bounded polling for facts the provider reports (never a timed assertion: the bound only ends a hang).
const POLLS = 1_500;
const POLL_MS = 10;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The provider contract (S1, S2, S4, T5, T6): the same tests for every `SubprocessProvider` —
 * local, sandboxed, SSH. Call it inside a test file with the provider's factory.
 *
 * @example
 * ```ts
 * providerContract('local', () => ({ provider: createLocalProvider(), cwd: '/tmp', provesInput: true,
 *   dispose: async () => {} }));
 * ```
 */
export function providerContract(name: string, factory: ProviderFactory): void {
  describe(`provider contract: ${name}`, () => contractTests(name, factory));
}

function contractTests(name: string, factory: ProviderFactory): void {
  let put: ProviderUnderTest;
  const handles: Array<SubprocessHandle | TerminalHandle> = [];

  beforeEach(async () => {
    put = await factory();
  });
  afterEach(async () => {
    for (const handle of handles.splice(0)) await handle.kill();
    await put.dispose();
  });

  const spec = (argv: [string, ...string[]], stdio: Partial<SubprocessSpawnSpec['stdio']> = {}) =>
    ({
      argv,
      cwd: put.cwd,
      cleanupGraceMs: 500,
      stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe', ...stdio },
    }) as const;
  const spawn = async (s: SubprocessSpawnSpec) => {
    const handle = await put.provider.spawn(s);
    handles.push(handle);
    return handle;
  };
  const terminal = async (argv: [string, ...string[]], more: Partial<TerminalSpawnSpec> = {}) => {
    const handle = await put.provider.spawnTerminal({
      argv,
      cwd: put.cwd,
      cols: 80,
      rows: 24,
      cleanupGraceMs: 500,
      env: { TERM: 'xterm-256color' },
      ...more,
    });
    handles.push(handle);
    return handle;
  };
  // Pids (of the provider's own process space) that are still alive, asked through the provider.
  const stillAlive = async (pids: readonly number[]): Promise<string> => {
    const script =
      'for p; do s=$(ps -o stat= -p "$p"); case "$s" in ""|Z*) ;; *) echo "alive $p $s";; esac; done';
    const check = await spawn(spec(['bash', '-c', script, 'check', ...pids.map(String)]));
    const out = await collect(check.stdout);
    await check.exited;
    return out;
  };
  const assertGone = async (treeId: string, pids: readonly number[]) => {
    expect(await stillAlive(pids)).toBe('');
    if (put.host) expect(put.host.livePids(treeId)).toEqual([]);
  };

  describe(`${name}: spawn`, () => {
    it('S1: argv reaches the program as given, without shell interpretation', async () => {
      const args = ['a "b" c', '$HOME', '*', 'x\ny', "it's", '`id`', ''];
      const child = await spawn(spec(['printf', '[%s]\\n', ...args]));
      const out = await collect(child.stdout);
      expect(await child.exited).toEqual({ exitCode: 0, signal: null });
      expect(out).toBe(args.map((a) => `[${a}]\n`).join(''));
    });

    it('S1: stdin pipe feeds the program; stdout and stderr pipes are separate', async () => {
      const child = await spawn(spec(['bash', '-c', 'cat; echo oops >&2'], { stdin: 'pipe' }));
      const [out, err] = [collect(child.stdout), collect(child.stderr)];
      child.stdin!.end('hello\n');
      expect(await child.exited).toEqual({ exitCode: 0, signal: null });
      expect(await out).toBe('hello\n');
      expect(await err).toBe('oops\n');
    });

    it("S1: 'ignore' gives no stream and an empty stdin; 'inherit' gives no stream", async () => {
      const ignored = await spawn(
        spec(['bash', '-c', 'cat; echo done'], { stdin: 'ignore', stderr: 'ignore' }),
      );
      expect(ignored.stdin).toBeNull();
      expect(ignored.stderr).toBeNull();
      expect(await collect(ignored.stdout)).toBe('done\n');
      const inherited = await spawn(
        spec(['true'], { stdin: 'inherit', stdout: 'inherit', stderr: 'inherit' }),
      );
      expect([inherited.stdin, inherited.stdout, inherited.stderr]).toEqual([null, null, null]);
      expect(await inherited.exited).toEqual({ exitCode: 0, signal: null });
    });

    it('S1: exit facts: a code, or the signal that ended the leader', async () => {
      const coded = await spawn(spec(['bash', '-c', 'exit 7']));
      expect(await coded.exited).toEqual({ exitCode: 7, signal: null });
      const signalled = await spawn(spec(['bash', '-c', 'kill -TERM $$']));
      expect(await signalled.exited).toEqual({ exitCode: null, signal: 'SIGTERM' });
    });

    it('S1: a missing cwd is CWD_NOT_FOUND and a missing program SPAWN_FAILED', async () => {
      const missingCwd = await put.provider
        .spawn({ ...spec(['true']), cwd: '/nonexistent/tether-contract' })
        .catch((e: unknown) => e);
      expect(codeOf(missingCwd)).toBe('CWD_NOT_FOUND');
      const missingProgram = await put.provider
        .spawn(spec(['tether-no-such-program']))
        .catch((e: unknown) => e);
      expect(codeOf(missingProgram)).toBe('SPAWN_FAILED');
    });

    it('S1, S4: the leader starts in a session of its own holding only 0, 1 and 2, with no signal blocked and SIGHUP, SIGPIPE, SIGXFSZ at their defaults', async () => {
      const child = await spawn(spec(['sleep', '30'], { stdin: 'pipe' }));
      const { pid } = child.identity;
      // Read from outside: the leader runs no code of ours to look at itself. `sleep` opens its
      // locale file for a moment at its start: the look lets it settle (up to 1 s) before it
      // lists; an inherited fd never goes away, so it is still seen.
      const look = await spawn(
        spec([
          'bash',
          '-c',
          'for i in $(seq 50); do [ "$(ls /proc/$1/fd | tr "\\n" " ")" = "0 1 2 " ] && break; sleep 0.02; done; ' +
            'ls /proc/$1/fd | tr "\\n" " "; echo; ps -o sid= -p $1; grep -E "^Sig(Blk|Ign)" /proc/$1/status',
          'look',
          String(pid),
        ]),
      );
      const [fds, sid, blocked, ignored] = (await collect(look.stdout)).trim().split('\n');
      if (put.passesHostFds) expect(fds).toMatch(/^0 1 2 /);
      else expect(fds).toBe('0 1 2 ');
      expect(Number(sid)).toBe(pid);
      expect(blocked).toBe('SigBlk:\t0000000000000000');
      // Bits of signals 1, 13 and 25 (glibc's posix_spawn may leave its own 32 and 33 ignored;
      // a glibc program installs its handlers for them itself).
      const mask = BigInt(`0x${ignored!.split('\t')[1]}`);
      expect(mask & ((1n << 0n) | (1n << 12n) | (1n << 24n))).toBe(0n);
    });

    it('S4: kill proves the tree gone, escapees included (setsid, double fork, nohup)', async () => {
      const script = [
        'setsid sleep 1000 & echo $!',
        '( sleep 1000 & echo $! ) ',
        'nohup sleep 1000 >/dev/null 2>&1 & echo $!',
        'echo ready',
        'exec sleep 1000',
      ].join('\n');
      const child = await spawn(spec(['bash', '-c', script]));
      const lines = await linesUntil(child.stdout, 'ready');
      const pids = [child.identity.pid, ...lines.map(Number)];
      expect(pids.every((p) => Number.isSafeInteger(p) && p > 0)).toBe(true);
      const verdict = await child.kill();
      expect(verdict).toMatchObject({ status: 'quiescent', killed: 4 });
      await assertGone(child.treeId, pids);
    });

    it('S4: after the leader exited, kill sweeps the escapee it left', async () => {
      const child = await spawn(spec(['bash', '-c', 'setsid sleep 1000 & echo $!; echo ready']));
      const [escapee] = (await linesUntil(child.stdout, 'ready')).map(Number);
      expect(await child.exited).toEqual({ exitCode: 0, signal: null });
      expect(await stillAlive([escapee!])).toContain(`alive ${escapee}`);
      expect(await child.kill()).toMatchObject({ status: 'quiescent', killed: 1 });
      await assertGone(child.treeId, [escapee!]);
    });
  });

  describe(`${name}: spawnTerminal`, () => {
    it('S1: exit facts of a terminal session, every byte delivered before `exited`', async () => {
      const t = await terminal(['bash', '--norc', '--noprofile', '-c', 'seq 1 20000; echo END; exit 3']);
      let seen = '';
      t.onData((text) => {
        seen += text;
      });
      expect(await t.exited).toEqual({ exitCode: 3, signal: null, reason: 'exit' });
      expect(seen).toContain('\r\n20000\r\nEND');
      expect(seen.split('\r\n').filter((l) => /^\d+$/.test(l)).length).toBe(20000);
    });

    it('S2: output that arrived before anyone listened, even after exit, is not lost', async () => {
      const t = await terminal(['bash', '--norc', '--noprofile', '-c', 'seq 1 5000; echo END']);
      await t.exited;
      let seen = '';
      t.onData((text) => {
        seen += text;
      });
      expect(seen).toContain('\r\n5000\r\nEND');
    });

    it('S2: resize changes the window the program sees', async () => {
      const t = await terminal([
        'bash',
        '--norc',
        '--noprofile',
        '-c',
        'stty size; read x; stty size; read y',
      ]);
      const out = outputOf(t);
      await out.until(/24 80\r\n/);
      t.resize(132, 50);
      await t.write('\r');
      await out.until(/50 132\r\n/);
    });

    it('S4, T4: kill proves a terminal tree gone, a setsid escapee included', async () => {
      const t = await terminal([
        'bash',
        '--norc',
        '--noprofile',
        '-c',
        'setsid sleep 1000 & echo pid:$!; sleep 1000',
      ]);
      const escapee = Number((await outputOf(t).until(/pid:(\d+)\r\n/))[1]);
      const verdict = await t.kill();
      expect(verdict).toMatchObject({ status: 'quiescent' });
      expect((await t.exited).reason).toBe('exit');
      await assertGone(t.treeId, [t.identity.pid, escapee]);
      expect(t.signal('SIGINT', 'foreground')).toBe(false); // after exit nothing is delivered
    });

    it('T8: signalForeground interrupts what runs in the foreground', async () => {
      const t = await terminal([
        'bash',
        '--norc',
        '--noprofile',
        '-c',
        'echo ready; sleep 1000; echo after:$?',
      ]);
      await outputOf(t).until(/ready/);
      expect(await waitUntilAnswer(t, (a) => !('waiting' in a && a.waiting))).toBeDefined();
      expect(await t.signalForeground('SIGINT')).toBe(true);
      const exit = await t.exited;
      expect(exit.signal === 'SIGINT' || exit.exitCode === 130).toBe(true);
    });

    const waits: Array<[string, [string, ...string[]]]> = [
      ['read x', ['bash', '--norc', '--noprofile', '-c', 'echo ready; read x; echo got:$x; sleep 1000']],
      [
        "python3 -c 'input()'",
        [
          'python3',
          '-c',
          'print("ready", flush=True); x = input(); print("got:" + x); import time; time.sleep(1000)',
        ],
      ],
    ];
    for (const [what, argv] of waits) {
      it(`T6: \`${what}\` waiting on the terminal is proven (or, without proofs, never claimed)`, async () => {
        const t = await terminal(argv);
        const out = outputOf(t);
        await out.until(/ready/);
        if (put.provesInput) {
          const answer = await waitUntilAnswer(t, (a) => 'waiting' in a && a.waiting);
          expect(answer).toMatchObject({ waiting: true, proof: { pid: expect.any(Number) } });
        } else {
          for (let i = 0; i < 20; i++) expect(await t.probeInput()).not.toMatchObject({ waiting: true });
        }
        await t.write('hi\r');
        await out.until(/got:hi/);
        // Now it sleeps: whatever the provider says, it is not a wait for input.
        const later = await waitUntilAnswer(t, (a) => !('waiting' in a && a.waiting));
        expect(later).not.toMatchObject({ waiting: true });
      });
    }
  });
}

function codeOf(err: unknown): string {
  return err instanceof TetherError ? err.code : String(err);
}

// Everything a stream carries until it ends ('' for no stream).
function collect(stream: NodeJS.ReadableStream | null): Promise<string> {
  if (stream === null) return Promise.resolve('');
  return new Promise((resolve, reject) => {
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      text += chunk;
    });
    stream.on('end', () => resolve(text));
    stream.on('error', reject);
  });
}

// The lines a stream carries before the line `last` (which must come).
function linesUntil(stream: NodeJS.ReadableStream | null, last: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    let text = '';
    stream!.setEncoding('utf8');
    const onData = (chunk: string) => {
      text += chunk;
      const lines = text.split('\n');
      const at = lines.indexOf(last);
      if (at >= 0) {
        stream!.off('data', onData);
        resolve(lines.slice(0, at));
      }
    };
    stream!.on('data', onData);
    stream!.on('end', () => reject(new Error(`stream ended before '${last}': ${JSON.stringify(text)}`)));
  });
}

// A terminal's output so far, and a wait for a pattern in it (rejects if the session ends first).
function outputOf(t: TerminalHandle): { until(pattern: RegExp): Promise<RegExpMatchArray> } {
  let seen = '';
  const waiters = new Set<() => void>();
  t.onData((text) => {
    seen += text;
    for (const wake of [...waiters]) wake();
  });
  return {
    until: (pattern) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const match = seen.match(pattern);
          if (match) {
            waiters.delete(check);
            resolve(match);
          }
        };
        waiters.add(check);
        check();
        void t.exited.then(() => {
          if (waiters.delete(check))
            reject(new Error(`session ended before ${pattern}: ${JSON.stringify(seen)}`));
        });
      }),
  };
}

// Probes until an answer satisfies `ok` (bounded: a hang fails with the last answer, not a timing).
async function waitUntilAnswer(t: TerminalHandle, ok: (a: InputProbe) => boolean): Promise<InputProbe> {
  let answer = await t.probeInput();
  for (let i = 0; i < POLLS && !ok(answer); i++) {
    await pause(POLL_MS);
    answer = await t.probeInput();
  }
  if (!ok(answer)) throw new Error(`the probe never answered as expected; last: ${JSON.stringify(answer)}`);
  return answer;
}
