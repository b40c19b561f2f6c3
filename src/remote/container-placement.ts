import { TetherError } from '../errors.js';
import {
  type ContainerEngine,
  isGone,
  removeArgs,
  runEngine,
} from '../subprocess/containment/container-engine.js';
import { type ContainerOrigin, labelArgs } from '../subprocess/containment/container-labels.js';
import { createContainerProvider } from './container-provider.js';
import type { ExecTransportOptions } from './exec-provider.js';
import { type PlacedOwner, placedOwner, placementChecks } from './placed-owner.js';

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

/**
 * The provider of one owner placed in a container: its container's, made and ended with the owner.
 *
 * @example
 * ```ts
 * const placed = placeInContainer(placement, origin);
 * console.log(placed.container); // 'tether-812-9031-1-o1'
 * ```
 */
export interface PlacedContainer extends PlacedOwner {
  /** The container's name (`tether-<runtime id>-<owner>`). */
  readonly container: string;
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
  // Also after a failed start: a run that failed half-way may have left it created.
  const remove = async () => {
    const r = await runEngine([...engineArgv, ...removeArgs(engine, container)], {
      timeoutMs: REMOVE_TIMEOUT_MS,
    });
    if (r.code !== 0 && !isGone(r.stderr)) {
      process.emitWarning(`tether: removing container ${container} failed: ${r.stderr}`, {
        code: 'TETHER_PROVIDER',
      });
    }
  };
  const placed = placedOwner({ name: 'container', label: `${engine}:${container}`, started, inner, remove });
  return Object.assign(placed, { container });
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
  const check = placementChecks(value, what);
  const { p, fail } = check;
  if (p.engine !== 'podman' && p.engine !== 'docker')
    fail(`engine must be 'podman' or 'docker', got ${String(p.engine)}`);
  if (typeof p.image !== 'string' || p.image === '') fail('image must be a non-empty string');
  check.strings(['user', 'command']);
  check.words(['engineArgs', 'runArgs']);
  const exec = check.common();
  // The exec transport's own checks (a provider made and dropped: it starts nothing until used).
  createContainerProvider({ ...exec, engine: p.engine as ContainerEngine, container: 'check' });
}
