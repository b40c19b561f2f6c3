import { createHelperProvider, type RemoteProvider } from './helper-provider.js';
import { openSshLink } from './ssh-connection.js';
import { resolveSshOptions, type SshProviderOptions } from './ssh-options.js';

export type { SshProviderOptions } from './ssh-options.js';

/** The SSH provider: a {@link RemoteProvider} whose label is `user@host:port`. */
export type SshProvider = RemoteProvider;

/**
 * A provider that runs every tree on another host over SSH (X1): one connection, one exec
 * channel to the remote helper (X2) that multiplexes every job and terminal, so the server's
 * session limit is never reached. The helper (python3 ≥ 3.8, Linux /proc) is uploaded on
 * connect. A lost or stalled connection (keepalive, X3) fails the calls in flight with
 * PROVIDER_LOST; the provider reconnects and re-attaches every tree from its output cursors;
 * trees that cannot be re-attached end (`exited` with no code, terminals `host_crashed`) and
 * are killed on the host the next time it is reached.
 *
 * @example
 * ```ts
 * const provider = createSshProvider({ host: 'build-1', username: 'ci', privateKey,
 *   hostKey: 'ssh-ed25519 AAAAC3Nza…' });
 * const rt = createRuntime({ provider }); // shell, jobs, terminals and agents run on build-1
 * ```
 */
export function createSshProvider(input: SshProviderOptions): SshProvider {
  const options = resolveSshOptions(input);
  return createHelperProvider({
    name: 'ssh',
    label: options.label,
    kind: 'SSH connection',
    open: (signal) => openSshLink(options, signal),
    lingerMs: options.lingerMs,
    reconnectAttempts: options.reconnectAttempts,
    reconnectDelayMs: options.reconnectDelayMs,
    byeBoundMs: options.keepaliveIntervalMs,
    connectBoundMs: options.connectTimeoutMs,
    ...(options.env === undefined ? {} : { env: options.env }),
  });
}
