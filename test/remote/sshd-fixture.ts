import { userInfo } from 'node:os';
import { join } from 'node:path';
import {
  createSshProvider,
  type SshProvider,
  type SshProviderOptions,
} from '../../src/remote/ssh-provider.js';
import { startSshdServer } from '../support/sshd-server.js';

/**
 * A real OpenSSH server for one test (X1, X3): its own host key, authorized key and config on a
 * random loopback port, `sshd -D -e` as a child of this test process (never the system sshd,
 * never port 22). Everything it starts is this test's, so the leak oracle watches it too.
 */
export interface Sshd {
  readonly port: number;
  readonly dir: string;
  /** The server's public host key line, for `hostKey`. */
  readonly hostKey: string;
  readonly username: string;
  /** The listener and every sshd process under it (the per-connection ones), listener first. */
  sshdPids(): number[];
  /** Provider options for this server (short keepalive, a per-server helper directory). */
  options(more?: Partial<SshProviderOptions>): SshProviderOptions;
  provider(more?: Partial<SshProviderOptions>): SshProvider;
  /** Stops the listener and every sshd process under it (only the ones this fixture started). */
  stop(): Promise<void>;
}

/**
 * Starts one sshd for a test.
 *
 * @example
 * ```ts
 * const sshd = await startSshd();
 * const provider = sshd.provider();
 * ```
 */
export async function startSshd(): Promise<Sshd> {
  const server = await startSshdServer();
  const username = userInfo().username;
  const options = (more: Partial<SshProviderOptions> = {}): SshProviderOptions => ({
    host: '127.0.0.1',
    port: server.port,
    username,
    privateKey: server.userKey,
    hostKey: server.hostKey,
    helperDir: join(server.dir, 'helper'),
    keepalive: { intervalMs: 500, countMax: 2 },
    connectTimeoutMs: 3000,
    reconnect: { attempts: 3, delayMs: 200 },
    lingerMs: 20_000,
    ...more,
  });
  return {
    port: server.port,
    dir: server.dir,
    hostKey: server.hostKey,
    username,
    sshdPids: () => server.pids(),
    options,
    provider: (more) => createSshProvider(options(more)),
    stop: () => server.stop(),
  };
}
