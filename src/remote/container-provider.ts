import { TetherError } from '../errors.js';
import { createExecProvider, type ExecProvider, type ExecTransportOptions } from './exec-provider.js';

/** {@link createContainerProvider}'s options. */
export interface ContainerProviderOptions extends ExecTransportOptions {
  /** The container engine's CLI. Default 'podman'. */
  readonly engine?: 'podman' | 'docker';
  /** A running container's name or id; it needs python3 ≥ 3.8. */
  readonly container: string;
  /** `--user` for the exec (the helper and every tree run as it). Default the container's user. */
  readonly user?: string;
  /** The engine's executable, when not `engine` on the PATH. */
  readonly command?: string;
  /** Global flags before `exec` (`['--runtime', 'runc']`, `['--url', …]`, docker's `['-H', …]`). */
  readonly engineArgs?: readonly string[];
}

/**
 * The exec provider over `podman exec -i C` or `docker exec -i C` (X5): every tree runs in the
 * running container `container`, under the same helper as over SSH.
 *
 * @example
 * ```ts
 * const provider = createContainerProvider({ engine: 'podman', container: 'agent-1' });
 * const rt = await createRuntime({ provider, cwd: '/tmp' });
 * ```
 */
export function createContainerProvider(options: ContainerProviderOptions): ExecProvider {
  const { engine = 'podman', container, user, command, engineArgs = [], ...transport } = options;
  if (engine !== 'podman' && engine !== 'docker') {
    throw new TetherError(
      'INVALID_ARGUMENT',
      `createContainerProvider: engine must be 'podman' or 'docker', got ${String(engine)}`,
    );
  }
  if (typeof container !== 'string' || container === '') {
    throw new TetherError(
      'INVALID_ARGUMENT',
      'createContainerProvider: pass `container`, a running container',
    );
  }
  return createExecProvider({
    ...transport,
    argv: [
      command ?? engine,
      ...engineArgs,
      'exec',
      '-i',
      ...(user === undefined ? [] : ['--user', user]),
      container,
    ],
    label: `${engine}:${container}`,
  });
}
