import { Readable, Writable } from 'node:stream';
import type {
  SubprocessExit,
  SubprocessHandle,
  SubprocessSpawnSpec,
  TreeProof,
} from '../subprocess/types.js';
import { createCursor, identityOf, type RemoteHost, type RemoteTree, remoteTreeKill } from './remote-host.js';

/**
 * A process tree started by the remote helper (X1, X2), as a {@link SubprocessHandle}: its
 * stdout/stderr are the helper's numbered streams (flow-controlled by acks), stdin goes as
 * input frames, `kill` asks the helper for a verdict.
 *
 * @example
 * ```ts
 * const { tree, handle } = remoteProcess(host, 7, treeId, spec);
 * register(tree); await host.request({ op: 'spawn', n: 7, ... }); started(handle, reply);
 * ```
 */
export function remoteProcess(
  host: RemoteHost,
  n: number,
  treeId: string,
  spec: SubprocessSpawnSpec,
  from: Readonly<Record<string, number>> = {},
) {
  let resolveExit!: (exit: SubprocessExit) => void;
  const exited = new Promise<SubprocessExit>((resolve) => {
    resolveExit = resolve;
  });
  let exit: SubprocessExit | null = null;
  let lostReason: string | null = null;
  let gone: TreeProof | null = null;
  const ended = new Set<number>();
  const outputs = new Map<number, { readable: Readable | null; cursor: ReturnType<typeof createCursor> }>();
  for (const [sid, disposition] of [
    [1, spec.stdio.stdout],
    [2, spec.stdio.stderr],
  ] as const) {
    if (disposition === 'ignore') continue;
    const cursor = createCursor(
      (offset) => host.notify({ op: 'ack', n, stream: sid, offset }),
      from[sid] ?? 0,
    );
    // 'inherit': the remote output goes to this process's own stdout/stderr.
    const readable = disposition === 'pipe' ? new Readable({ read: () => cursor.consumed() }) : null;
    outputs.set(sid, { readable, cursor });
  }
  const stdin =
    spec.stdio.stdin === 'pipe'
      ? new Writable({
          write(chunk: Buffer, _enc, done) {
            if (exit !== null || lostReason !== null) return done();
            host.input(n, chunk).then(
              () => done(),
              () => done(),
            );
          },
          final(done) {
            if (exit === null && lostReason === null) host.notify({ op: 'eof', n, tree: treeId });
            done();
          },
        })
      : null;
  stdin?.on('error', () => {});

  const finishIfDone = () => {
    if (exit !== null && [...outputs.keys()].every((sid) => ended.has(sid))) host.release(n, treeId);
  };
  const endStream = (sid: number) => {
    if (ended.has(sid)) return;
    ended.add(sid);
    outputs.get(sid)?.cursor.end();
    outputs.get(sid)?.readable?.push(null);
    finishIfDone();
  };

  const tree: RemoteTree = {
    n,
    treeId,
    data(sid, offset, bytes) {
      const out = outputs.get(sid);
      const fresh = out?.cursor.accept(offset, bytes);
      if (!out || !fresh) return;
      if (out.readable === null) {
        (sid === 1 ? process.stdout : process.stderr).write(fresh);
        out.cursor.consumed();
      } else if (out.readable.push(fresh)) out.cursor.consumed();
    },
    event(message) {
      if (message.ev === 'eof') endStream(message.stream as number);
      if (message.ev === 'exit' && exit === null) {
        gone = message.gone === true ? ((message.proof as TreeProof | undefined) ?? 'cgroup') : null;
        exit = {
          exitCode: (message.code as number | null) ?? null,
          signal: (message.signal as NodeJS.Signals | null) ?? null,
        };
        resolveExit(exit);
        finishIfDone();
      }
    },
    cursors: () => Object.fromEntries([...outputs].map(([sid, o]) => [String(sid), o.cursor.received])),
    lost(reason) {
      if (lostReason !== null || exit !== null) return;
      lostReason = reason;
      for (const sid of outputs.keys()) endStream(sid);
      exit = { exitCode: null, signal: null };
      resolveExit(exit);
    },
  };

  const kill = remoteTreeKill(host, {
    n,
    treeId,
    what: 'tree',
    graceMs: spec.cleanupGraceMs,
    exited,
    lost: () => lostReason,
    gone: () => gone,
  });

  const started = (reply: Record<string, unknown>): SubprocessHandle => {
    const identity = identityOf(reply);
    const handle: SubprocessHandle = {
      identity,
      treeId,
      stdin,
      stdout: outputs.get(1)?.readable ?? null,
      stderr: outputs.get(2)?.readable ?? null,
      exited,
      kill,
      async signalGroup(signal) {
        if (exit !== null) return false;
        const reply = await host.request({ op: 'signal', tree: treeId, signal, target: 'group' });
        return reply.delivered === true;
      },
    };
    const signal = spec.signal;
    if (signal?.aborted) void kill().catch(() => {});
    else if (signal) {
      const onAbort = () => void kill().catch(() => {});
      signal.addEventListener('abort', onAbort, { once: true });
      void exited.then(() => signal.removeEventListener('abort', onAbort));
    }
    return handle;
  };
  // K6: an adopted tree's replay reached `ends` (bytes per stream), or its streams ended.
  const reached = (ends: Readonly<Record<string, number>>): Promise<void> =>
    Promise.all([...outputs].map(([sid, o]) => o.cursor.until(ends[String(sid)] ?? 0))).then(() => {});
  return { tree, started, reached };
}
