import { StringDecoder } from 'node:string_decoder';
import { TetherError } from '../errors.js';
import type {
  InputProbe,
  TerminalHandle,
  TerminalHandleExit,
  TerminalSpawnSpec,
  TreeProof,
} from '../subprocess/types.js';
import { createCursor, identityOf, type RemoteHost, type RemoteTree, remoteTreeKill } from './remote-host.js';

const PTY_STREAM = 3;

/**
 * A terminal whose pty the remote helper holds (X1, X2), as a {@link TerminalHandle}: output is
 * the helper's numbered pty stream, `probeInput` and `signalForeground` are answered by the
 * helper from the remote /proc, `kill` hangs up and kills the session to a verdict there.
 *
 * @example
 * ```ts
 * const { tree, started } = remoteTerminal(host, 8, treeId, spec);
 * const handle = started(await host.request({ op: 'spawn', n: 8, pty: { cols: 80, rows: 24 }, ... }));
 * ```
 */
export function remoteTerminal(
  host: RemoteHost,
  n: number,
  treeId: string,
  spec: TerminalSpawnSpec,
  from: Readonly<Record<string, number>> = {},
) {
  let resolveExit!: (exit: TerminalHandleExit) => void;
  const exited = new Promise<TerminalHandleExit>((resolve) => {
    resolveExit = resolve;
  });
  let exitFacts: { exit: TerminalHandleExit; end: number } | null = null;
  let done = false;
  const decoder = new StringDecoder('utf8');
  const cursor = createCursor(
    (offset) => host.notify({ op: 'ack', n, stream: PTY_STREAM, offset }),
    from[PTY_STREAM] ?? 0,
  );
  const listeners = new Set<(text: string) => void>();
  let unheard: string[] = [];
  let lastOutputAt = performance.now();
  // T5: where the pty stream ended when the helper answered the last probe, and who waits for it.
  let proofEnd = 0;
  let reached: Array<() => void> = [];
  const wake = () => {
    if (!done && cursor.received < proofEnd) return;
    const waiting = reached;
    reached = [];
    for (const resolve of waiting) resolve();
  };

  const deliver = (text: string) => {
    if (text === '') return;
    if (listeners.size === 0) unheard.push(text);
    for (const listener of [...listeners]) listener(text);
  };
  // Every byte up to the end the helper reported at exit is delivered before `exited` (S1).
  const settle = () => {
    if (done || exitFacts === null || cursor.received < exitFacts.end) return;
    done = true;
    cursor.end();
    deliver(decoder.end());
    resolveExit(exitFacts.exit);
    host.release(n, treeId);
    wake();
  };

  const tree: RemoteTree = {
    n,
    treeId,
    data(sid, offset, bytes) {
      const fresh = sid === PTY_STREAM ? cursor.accept(offset, bytes) : null;
      if (!fresh) return;
      lastOutputAt = performance.now();
      deliver(decoder.write(fresh));
      cursor.consumed();
      settle();
      wake();
    },
    event(message) {
      if (message.ev !== 'exit' || exitFacts !== null) return;
      const ends = message.ends as Record<string, number>;
      gone = message.gone === true ? ((message.proof as TreeProof | undefined) ?? 'cgroup') : null;
      exitFacts = {
        exit: {
          exitCode: (message.code as number | null) ?? null,
          signal: (message.signal as NodeJS.Signals | null) ?? null,
          reason: 'exit',
        },
        end: ends[String(PTY_STREAM)] ?? 0,
      };
      settle();
    },
    cursors: () => ({ [String(PTY_STREAM)]: cursor.received }),
    lost(reason) {
      if (done) return;
      exitFacts = { exit: { exitCode: null, signal: null, reason: 'host_crashed' }, end: 0 };
      lostReason = reason;
      settle();
    },
  };
  let lostReason: string | null = null;
  let gone: TreeProof | null = null;
  const kill = remoteTreeKill(host, {
    n,
    treeId,
    what: 'terminal',
    graceMs: spec.cleanupGraceMs,
    exited,
    lost: () => lostReason,
    gone: () => gone,
  });

  const started = (reply: Record<string, unknown>): TerminalHandle => ({
    identity: identityOf(reply),
    treeId,
    ttyPath: reply.tty as string,
    async write(data) {
      if (done)
        throw new TetherError('TERMINAL_CLOSED', `the terminal on ${host.label} has exited; open a new one`);
      await host.input(n, Buffer.from(data, 'utf8'));
    },
    resize(cols, rows) {
      if (!done) host.notify({ op: 'resize', tree: treeId, cols, rows });
    },
    onData(listener) {
      listeners.add(listener);
      const replay = unheard;
      unheard = [];
      for (const text of replay) listener(text);
      return () => listeners.delete(listener);
    },
    get lastOutputAt() {
      return lastOutputAt;
    },
    exited,
    signal(signal, target) {
      if (done) return false;
      host.request({ op: 'signal', tree: treeId, signal, target }).catch(() => {});
      return true;
    },
    async signalForeground(signal) {
      if (done) return false;
      const reply = await host.request({ op: 'signal', tree: treeId, signal, target: 'foreground' });
      return reply.delivered === true;
    },
    async probeInput(): Promise<InputProbe> {
      if (done) return { waiting: false, reason: 'the terminal has exited' };
      try {
        const reply = await host.request({ op: 'probe', tree: treeId });
        if (typeof reply.end === 'number') proofEnd = Math.max(proofEnd, reply.end);
        return reply.answer as InputProbe;
      } catch (err) {
        return { unknown: err instanceof Error ? err.message : String(err) };
      }
    },
    // T5: every byte the helper had read from the pty when it answered the last probe has been
    // handed to the listeners (it may trail the reply, or come again after a re-attach).
    settled() {
      if (done || cursor.received >= proofEnd) return Promise.resolve();
      return new Promise<void>((resolve) => reached.push(resolve));
    },
    kill,
  });
  // K6: an adopted terminal's replay reached `ends`, or the terminal ended.
  const replayed = (ends: Readonly<Record<string, number>>): Promise<void> =>
    cursor.until(ends[String(PTY_STREAM)] ?? 0);
  return { tree, started, reached: replayed };
}
