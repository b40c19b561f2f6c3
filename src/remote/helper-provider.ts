import { setTimeout as sleep } from 'node:timers/promises';
import { TetherError } from '../errors.js';
import { type EnvPolicy, sanitizeEnv } from '../subprocess/env.js';
import { newTreeId } from '../subprocess/marker.js';
import type {
  SubprocessHandle,
  SubprocessProvider,
  SubprocessSpawnSpec,
  TerminalHandle,
  TerminalSpawnSpec,
} from '../subprocess/types.js';
import { createHelperChannel, type Heartbeat, type HelperChannel, lostError } from './helper-channel.js';
import type { HelperLink } from './helper-link.js';
import type { RemoteHost, RemoteTree } from './remote-host.js';
import { remoteProcess } from './remote-process.js';
import { remoteTerminal } from './remote-terminal.js';

/** A provider over a remote helper: also says whether its link is up (`workers`, D3). */
export interface RemoteProvider extends SubprocessProvider {
  /** 1 while a link is open, else 0. */
  readonly workers: number;
  /** Where it runs: `user@host:port`, `podman:c1`, `kubectl:ns/pod`. */
  readonly label: string;
  /** Whether remote hosts answer `stdin_read` probes (known after the first connect). */
  readonly provesInput: boolean | null;
  /**
   * Says goodbye to the helper and closes every link. Trees whose kill found the link down are
   * killed first if the host is reached again within the connect bound; rejects PROVIDER_LOST,
   * naming how many, when some could not be (they may still run there until the helper's linger).
   */
  dispose(): Promise<void>;
}

/** How {@link createHelperProvider} reaches its helper; the transports fill it in. */
export interface HelperProviderConfig {
  /** The provider's `name` ('ssh', 'exec'). */
  readonly name: string;
  readonly label: string;
  /** What carries the link, for messages ('SSH connection', 'exec link'). */
  readonly kind: string;
  /**
   * Opens one link to a greeted helper; rejects PROVIDER_UNAVAILABLE within its own bound, and
   * at once when `signal` aborts (dispose: a handshake with a stalled host must not hold it).
   */
  open(signal?: AbortSignal): Promise<HelperLink>;
  readonly lingerMs: number;
  readonly reconnectAttempts: number;
  readonly reconnectDelayMs: number;
  /** Bound on the goodbye at dispose. */
  readonly byeBoundMs: number;
  /** Bound on a connect under way at dispose. */
  readonly connectBoundMs: number;
  readonly env?: EnvPolicy;
  /** The helper-level keepalive, for transports without their own. */
  readonly heartbeat?: Heartbeat;
  /** More fields of every `hello` (K6: the runtime's claim on a persisted helper). */
  readonly hello?: Readonly<Record<string, unknown>>;
  /** The id of each new tree (its `TETHER_TREE` marker); default {@link newTreeId}. */
  readonly treeId?: () => string;
  /** What the helper says of no tree of this client (K6: `lingered`, a tree killed unadopted). */
  onEvent?(message: Record<string, unknown>): void;
  /** More fields of each `spawn` (K6: the tree's tag, bytes kept for a successor, one stream). */
  spawnFields?(spec: SubprocessSpawnSpec | TerminalSpawnSpec): Record<string, unknown>;
}

/**
 * A {@link RemoteProvider} that also takes over trees its helper kept from an earlier client
 * (K6): `adoptProcess`/`adoptTerminal` attach to tree `treeId` and replay its output from
 * `cursors` (bytes per stream, at or after what the helper still holds); `request` asks the
 * helper anything else (`list`, `end`).
 */
export interface HelperProvider extends RemoteProvider {
  request(message: Record<string, unknown>): Promise<Record<string, unknown>>;
  adoptProcess(tree: AdoptedTree, spec: SubprocessSpawnSpec): Promise<Adopted<SubprocessHandle>>;
  adoptTerminal(tree: AdoptedTree, spec: TerminalSpawnSpec): Promise<Adopted<TerminalHandle>>;
  /** Gives an adopted tree back to the helper (its handle hears no more), as if never adopted. */
  detach(treeId: string): Promise<void>;
}

/** A tree the helper holds, as its `list` names it: what an adopt needs. */
export interface AdoptedTree {
  readonly treeId: string;
  readonly pid: number;
  readonly start: number | null;
  readonly tty: string | null;
  /** Bytes per stream to resume from (the helper's oldest kept byte, or later). */
  readonly cursors: Readonly<Record<string, number>>;
  /** Bytes per stream the helper had read when it was listed: the replay reaches at least these. */
  readonly ends: Readonly<Record<string, number>>;
}

/** An adopted tree's handle, and when its replay reached the ends it was listed with. */
export interface Adopted<H> {
  readonly handle: H;
  /** Resolves once every byte up to `AdoptedTree.ends` was handed on (or the tree ended). */
  readonly caughtUp: Promise<void>;
}

interface Session {
  readonly helper: HelperChannel;
  readonly instance: string;
  readonly env: Record<string, string>;
}

/**
 * A provider whose every tree runs under one remote helper (X2), reached over any transport
 * (X1 SSH, X5 exec): one link that multiplexes every job and terminal. A lost link fails the
 * calls in flight with PROVIDER_LOST; the provider opens a new one and re-attaches every tree
 * from its output cursors; trees that cannot be re-attached end (`exited` with no code,
 * terminals `host_crashed`) and are killed on the host the next time it is reached.
 *
 * @example
 * ```ts
 * const provider = createHelperProvider({ name: 'exec', label: 'podman:c1',
 *   open: () => openExecLink({ argv, at: 'podman:c1', helperDir, connectTimeoutMs: 5000 }),
 *   lingerMs: 300_000, reconnectAttempts: 3, reconnectDelayMs: 1000, boundMs: 5000 });
 * ```
 */
export function createHelperProvider(options: HelperProviderConfig): HelperProvider {
  const { label, kind } = options;
  const trees = new Map<number, RemoteTree>();
  // Trees whose helper died or whose host was lost: killed by marker once the host answers again.
  const orphans = new Set<string>();
  let session: Session | null = null;
  let connecting: Promise<Session> | null = null;
  let lastInstance: string | null = null;
  let provesInput: boolean | null = null;
  let disposed = false;
  const stop = new AbortController();
  // Every channel opened and not yet lost, the one being connected included: dispose closes them
  // all, so a reconnect that was under way when dispose came cannot leave a connection behind.
  const channels = new Set<HelperChannel>();
  const disposedError = () =>
    new TetherError('RUNTIME_DISPOSED', `the ${options.name} provider for ${label} was disposed`);
  let nextN = 0;

  const connect = async (): Promise<Session> => {
    const link = await options.open(stop.signal);
    if (disposed) {
      link.destroy();
      throw disposedError();
    }
    const helper = createHelperChannel(
      link,
      label,
      {
        data: (n, stream, offset, bytes) => trees.get(n)?.data(stream, offset, bytes),
        event: (message) => {
          const tree = typeof message.n === 'number' ? trees.get(message.n) : undefined;
          if (tree !== undefined) tree.event(message);
          else if (message.n === undefined) options.onEvent?.(message);
        },
      },
      options.heartbeat,
    );
    channels.add(helper);
    void helper.lost.then(() => channels.delete(helper));
    try {
      return await greet(helper);
    } catch (err) {
      helper.close();
      throw err;
    }
  };

  // Hello, re-attach or orphan each tree, kill the orphans; the session once all of it is done.
  const greet = async (helper: HelperChannel): Promise<Session> => {
    const hello = await helper.request({ ...options.hello, op: 'hello', lingerMs: options.lingerMs });
    const next: Session = {
      helper,
      instance: hello.instance as string,
      env: hello.env as Record<string, string>,
    };
    provesInput = hello.proofs === true;
    const sameHelper = lastInstance === hello.instance;
    lastInstance = next.instance;
    for (const tree of [...trees.values()]) {
      const attached =
        sameHelper &&
        (await helper.request({ op: 'attach', n: tree.n, tree: tree.treeId, cursors: tree.cursors() }).then(
          () => true,
          () => false,
        ));
      // A channel that closed mid-attach proves nothing about the tree: the next connect retries.
      if (!helper.alive) break;
      if (!attached) {
        trees.delete(tree.n);
        orphans.add(tree.treeId);
        tree.lost(`the remote helper on ${label} died; its trees are killed when it is reached again`);
      }
    }
    await killOrphans(helper);
    if (disposed || !helper.alive) {
      throw disposed ? disposedError() : lostError(label, 'the helper channel closed while connecting', kind);
    }
    void helper.lost.then((why) => onLost(next, why));
    return next;
  };

  // The trees a kill could not reach, killed now, all at once (the helper kills them side by side):
  // each is forgotten once the helper answered, or its kill failed while the channel stayed up.
  const killOrphans = async (helper: HelperChannel): Promise<void> => {
    await Promise.all(
      [...orphans].map(async (tree) => {
        await helper.request({ op: 'kill', tree, graceMs: 500 }).catch(() => {});
        if (!helper.alive) return;
        orphans.delete(tree);
        helper.notify({ op: 'release', tree }); // no handle will: the helper forgets it now
      }),
    );
  };

  // D2/X3: at dispose, trees whose kill found the link down (lost mid-dispose, a reconnect under
  // way) are not left to the helper's linger: the link is reached once more (a reconnect under
  // way, or a new connect), within `connectBoundMs`, and they are killed to a verdict.
  const sweepOrphans = async (): Promise<void> => {
    const bound = new AbortController();
    const swept = ready()
      .then((current) => killOrphans(current.helper))
      .catch(() => {});
    await Promise.race([
      swept,
      sleep(options.connectBoundMs, undefined, { signal: bound.signal }).catch(() => {}),
    ]);
    bound.abort();
  };

  // X3: fail what was in flight (the channel did), then try to re-attach the trees that remain.
  const onLost = (lost: Session, why: string) => {
    if (session !== lost) return;
    session = null;
    if (disposed || trees.size === 0) return;
    connecting = reconnect(why).finally(() => {
      connecting = null;
    });
    connecting.catch(() => {});
  };
  const reconnect = async (why: string): Promise<Session> => {
    let last: unknown = why;
    for (let attempt = 0; attempt < options.reconnectAttempts && !disposed; attempt++) {
      await sleep(options.reconnectDelayMs, undefined, { signal: stop.signal }).catch(() => {});
      if (disposed) break;
      try {
        session = await connect();
        return session;
      } catch (err) {
        last = err;
      }
    }
    const reason = `lost (${why}) and not re-established: ${last instanceof Error ? last.message : String(last)}`;
    for (const tree of [...trees.values()]) {
      orphans.add(tree.treeId);
      tree.lost(reason);
    }
    trees.clear();
    throw lostError(label, why, kind);
  };
  const ready = async (): Promise<Session> => {
    if (disposed) throw disposedError();
    if (session?.helper.alive) return session;
    connecting ??= connect()
      .then((s) => {
        session = s;
        return s;
      })
      .finally(() => {
        connecting = null;
      });
    return connecting;
  };

  const host: RemoteHost = {
    label,
    get connected() {
      return session?.helper.alive === true;
    },
    request: async (message) => (await ready()).helper.request(message),
    notify: (message) => session?.helper.notify(message),
    input: async (n, bytes) => (await ready()).helper.input(n, bytes),
    release: (n, tree) => {
      trees.delete(n);
      session?.helper.notify({ op: 'release', tree });
    },
    abandon: (n, tree, reason) => {
      const remote = trees.get(n);
      trees.delete(n);
      orphans.add(tree);
      remote?.lost(reason);
    },
  };

  // One tree on the helper: routed before the request leaves (its first frames may follow the
  // reply at once), dropped again when the spawn is refused.
  const start = async <R extends { readonly tree: RemoteTree }>(
    spec: SubprocessSpawnSpec | TerminalSpawnSpec,
    make: (n: number, treeId: string) => R,
    fields: Record<string, unknown>,
  ): Promise<{ remote: R; reply: Record<string, unknown> }> => {
    if (spec.signal?.aborted) throw new TetherError('ABORTED', 'the spawn was aborted before it started');
    const current = await ready();
    const n = ++nextN;
    const treeId = (options.treeId ?? newTreeId)();
    const env = sanitizeEnv(current.env, options.env, spec.env);
    const remote = make(n, treeId);
    trees.set(n, remote.tree);
    const extra = options.spawnFields?.(spec);
    const reply = await current.helper
      .request({ op: 'spawn', n, tree: treeId, argv: spec.argv, cwd: spec.cwd, env, ...fields, ...extra })
      .catch((err: unknown) => {
        trees.delete(n);
        throw err;
      });
    return { remote, reply };
  };

  // K6: a tree an earlier client left with the helper, routed before the attach replays it.
  const adopt = async <R extends { readonly tree: RemoteTree }>(
    tree: AdoptedTree,
    make: (n: number) => R,
  ): Promise<{ remote: R; reply: Record<string, unknown> }> => {
    const current = await ready();
    const n = ++nextN;
    const remote = make(n);
    trees.set(n, remote.tree);
    await current.helper
      .request({ op: 'attach', n, tree: tree.treeId, cursors: tree.cursors })
      .catch((err: unknown) => {
        trees.delete(n);
        throw err;
      });
    return { remote, reply: { pid: tree.pid, start: tree.start, tty: tree.tty } };
  };

  return {
    name: options.name,
    label,
    request: host.request,
    async adoptProcess(tree, spec) {
      const { remote, reply } = await adopt(tree, (n) =>
        remoteProcess(host, n, tree.treeId, spec, tree.cursors),
      );
      return { handle: remote.started(reply), caughtUp: remote.reached(tree.ends) };
    },
    async detach(treeId) {
      for (const [n, tree] of trees) if (tree.treeId === treeId) trees.delete(n);
      await host.request({ op: 'detach', tree: treeId });
    },
    async adoptTerminal(tree, spec) {
      const { remote, reply } = await adopt(tree, (n) =>
        remoteTerminal(host, n, tree.treeId, spec, tree.cursors),
      );
      return { handle: remote.started(reply), caughtUp: remote.reached(tree.ends) };
    },
    get provesInput() {
      return provesInput;
    },
    get workers() {
      return session?.helper.alive ? 1 : 0;
    },
    async spawn(spec) {
      const { stdin, stdout, stderr } = spec.stdio;
      const { remote, reply } = await start(spec, (n, treeId) => remoteProcess(host, n, treeId, spec), {
        stdin: stdin === 'pipe',
        stdio: [false, stdout !== 'ignore', stderr !== 'ignore'],
      });
      return remote.started(reply);
    },
    async spawnTerminal(spec) {
      const { remote, reply } = await start(spec, (n, treeId) => remoteTerminal(host, n, treeId, spec), {
        pty: { cols: spec.cols, rows: spec.rows },
      });
      const handle = remote.started(reply);
      if (spec.signal?.aborted) {
        await handle.kill();
        throw new TetherError('ABORTED', 'the spawn was aborted while the terminal was opening');
      }
      return handle;
    },
    async dispose() {
      if (disposed) return;
      if (orphans.size > 0) await sweepOrphans();
      disposed = true;
      stop.abort();
      const current = session;
      session = null;
      // A bounded goodbye: a dead or stalled host must not hold dispose (X3).
      const bound = new AbortController();
      const bye = current?.helper.alive
        ? current.helper.request({ op: 'bye', orphans: [...orphans] }).catch(() => {})
        : null;
      if (bye !== null) {
        await Promise.race([
          bye,
          sleep(options.byeBoundMs, undefined, { signal: bound.signal }).catch(() => {}),
        ]);
      }
      for (const helper of channels) helper.close();
      // A connect under way ends at its next step (its channel is closed, or it sees `disposed`
      // once the handshake returns): wait for it, within the handshake's own bound.
      const pending = connecting;
      if (pending !== null) {
        await Promise.race([
          pending.catch(() => {}),
          sleep(options.connectBoundMs, undefined, { signal: bound.signal }).catch(() => {}),
        ]);
      }
      bound.abort();
      // Never a silent "done" with trees alive (D2): what could not be reached is the error.
      if (orphans.size > 0) {
        throw new TetherError(
          'PROVIDER_LOST',
          `${orphans.size} remote tree(s) on ${label} could not be killed at dispose (the ${kind} was lost and not reached again within ${options.connectBoundMs} ms); they may still run there: the helper kills trees no client holds after lingerMs (${options.lingerMs} ms), or reach the host and end them`,
        );
      }
    },
  };
}
