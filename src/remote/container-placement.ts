import { TetherError } from '../errors.js';
import {
  type ContainerEngine,
  isGone,
  removeArgs,
  runEngine,
} from '../subprocess/containment/container-engine.js';
import { type ContainerOrigin, labelArgs } from '../subprocess/containment/container-labels.js';
import type { SubprocessSpawnSpec, TerminalSpawnSpec } from '../subprocess/types.js';
import { createContainerProvider } from './container-provider.js';
import type { ExecTransportOptions } from './exec-provider.js';
import type { RemoteProvider } from './helper-provider.js';

/**
 * X6: an owner placed in a container of its own — `owners.host({ placement })`,
 * `agents.create({ placement })`. The runtime starts it (`run -d --rm … IMAGE sleep infinity`,
 * labelled with the runtime's process and the owner), runs every tree of the owner in it through
 * the remote helper over `exec -i` (X5), and removes it (`rm -f`) once the owner's trees are
 * verified dead. The image needs python3 ≥ 3.8 and `sleep`.
 *
 * @example
 * ```ts
 * const lease = rt.owners.host({
 *   placement: { engine: 'podman', image: 'localhost/agent:1', runArgs: ['--init', '--network', 'none'] },
 * });
 * ```
 */
export interface ContainerPlacement {
  readonly engine: ContainerEngine;
  /** The image to run; its default command is replaced by `sleep infinity`. */
  readonly image: string;
  /** `--user` for the container and every exec into it. Default the image's user. */
  readonly user?: string;
  /** The engine's executable, when not `engine` on the PATH. */
  readonly command?: string;
  /** Global flags before every subcommand (`['--runtime', 'runc']`; docker's `['-H', host]`). */
  readonly engineArgs?: readonly string[];
  /** More `run` flags, before the image: `--init`, `--network none`, `-v /repo:/repo`, ulimits. */
  readonly runArgs?: readonly string[];
  /** Bound on `run` (an image pull included). Default 120000 ms. */
  readonly startTimeoutMs?: number;
  /** The exec transport's options (heartbeat, reconnect, linger), as for `createContainerProvider`. */
  readonly exec?: ExecTransportOptions;
}

/** The provider of one placed owner: its container's, made and ended with the owner. */
export interface PlacedContainer extends RemoteProvider {
  /** The container's name (`tether-<runtime id>-<owner>`). */
  readonly container: string;
  /** Ends the helper link, then removes the container. Idempotent. */
  dispose(): Promise<void>;
}

const REMOVE_TIMEOUT_MS = 30_000;

/**
 * Starts the container of one owner now (in the background: `owners.host` is synchronous) and
 * returns the provider that runs its trees there. A container that cannot start makes every
 * spawn reject PROVIDER_UNAVAILABLE with the engine's own error; nothing starts anywhere else.
 * Options are checked first (INVALID_ARGUMENT naming the field, nothing started).
 *
 * @example
 * ```ts
 * const placed = placeInContainer({ engine: 'podman', image: 'localhost/agent:1' }, origin);
 * // ... trees run in placed.container ...
 * await placed.dispose(); // after they are dead
 * ```
 */
export function placeInContainer(options: ContainerPlacement, origin: ContainerOrigin): PlacedContainer {
  assertContainerPlacement(options, 'placement');
  const { engine, image, user } = options;
  const engineArgv: [string, ...string[]] = [options.command ?? engine, ...(options.engineArgs ?? [])];
  const container = `tether-${origin.runtimeId}-${origin.owner}`.replace(/[^a-zA-Z0-9_.-]/g, '_');
  const inner = createContainerProvider({
    ...options.exec,
    engine,
    container,
    ...(user === undefined ? {} : { user }),
    ...(options.command === undefined ? {} : { command: options.command }),
    engineArgs: options.engineArgs ?? [],
  });
  const timeoutMs = options.startTimeoutMs ?? 120_000;
  const run = [
    ...engineArgv,
    'run',
    '-d',
    '--rm',
    '--name',
    container,
    ...labelArgs(origin),
    ...(user === undefined ? [] : ['--user', user]),
    ...(options.runArgs ?? []),
    image,
    'sleep',
    'infinity',
  ] as const;
  const started = runEngine(run, { timeoutMs }).then((r) => {
    if (r.code === 0) return;
    throw new TetherError(
      'PROVIDER_UNAVAILABLE',
      `${engine} could not start a container of ${image} for this owner (${r.code === null ? 'not run' : `exit ${r.code}`}): ${r.stderr || '(no error output)'}; nothing of the owner runs elsewhere`,
    );
  });
  started.catch(() => {}); // surfaced by the owner's first spawn
  let disposing: Promise<void> | null = null;

  const ready = async (signal: AbortSignal | undefined) => {
    await untilAborted(started, signal);
    return inner;
  };
  return {
    name: 'container',
    label: `${engine}:${container}`,
    container,
    get workers() {
      return inner.workers;
    },
    get provesInput() {
      return inner.provesInput;
    },
    spawn: async (spec: SubprocessSpawnSpec) => (await ready(spec.signal)).spawn(spec),
    spawnTerminal: async (spec: TerminalSpawnSpec) => (await ready(spec.signal)).spawnTerminal(spec),
    dispose() {
      disposing ??= (async () => {
        await inner.dispose();
        await started.catch(() => {});
        // Also after a failed start: a run that failed half-way may have left it created.
        const r = await runEngine([...engineArgv, ...removeArgs(engine, container)], {
          timeoutMs: REMOVE_TIMEOUT_MS,
        });
        if (r.code !== 0 && !isGone(r.stderr)) {
          process.emitWarning(`tether: removing container ${container} failed: ${r.stderr}`, {
            code: 'TETHER_PROVIDER',
          });
        }
      })();
      return disposing;
    },
  };
}

/**
 * Throws INVALID_ARGUMENT naming the field unless `value` is a {@link ContainerPlacement}.
 *
 * @example
 * ```ts
 * assertContainerPlacement({ engine: 'podman', image: 'alpine' }, 'owners.host options.placement');
 * ```
 */
export function assertContainerPlacement(value: unknown, what: string): asserts value is ContainerPlacement {
  const fail = (message: string): never => {
    throw new TetherError('INVALID_ARGUMENT', `${what}: ${message}`);
  };
  if (typeof value !== 'object' || value === null) fail('must be { engine, image, … }');
  const p = value as Record<string, unknown>;
  if (p.engine !== 'podman' && p.engine !== 'docker')
    fail(`engine must be 'podman' or 'docker', got ${String(p.engine)}`);
  if (typeof p.image !== 'string' || p.image === '') fail('image must be a non-empty string');
  for (const key of ['user', 'command'] as const) {
    if (p[key] !== undefined && (typeof p[key] !== 'string' || p[key] === ''))
      fail(`${key} must be a non-empty string`);
  }
  for (const key of ['engineArgs', 'runArgs'] as const) {
    const words = p[key];
    if (words !== undefined && !(Array.isArray(words) && words.every((w) => typeof w === 'string')))
      fail(`${key} must be an array of strings`);
  }
  const ms = p.startTimeoutMs;
  if (ms !== undefined && !(typeof ms === 'number' && Number.isFinite(ms) && ms > 0))
    fail(`startTimeoutMs must be a positive number, got ${String(ms)}`);
  if (p.exec !== undefined && (typeof p.exec !== 'object' || p.exec === null)) fail('exec must be an object');
  // The exec transport's own checks (a provider made and dropped: it starts nothing until used).
  createContainerProvider({
    ...(p.exec as ExecTransportOptions | undefined),
    engine: p.engine as ContainerEngine,
    container: 'check',
  });
}

// The start, unless the spawn is aborted first (then ABORTED: the container goes on starting,
// for the owner's next spawn or its removal).
async function untilAborted(start: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return start;
  if (signal.aborted) throw new TetherError('ABORTED', 'the spawn was aborted before it started');
  let stop!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    stop = () => reject(new TetherError('ABORTED', 'the spawn was aborted while its container was starting'));
    signal.addEventListener('abort', stop, { once: true });
  });
  try {
    await Promise.race([start, aborted]);
  } finally {
    signal.removeEventListener('abort', stop);
  }
}
