/** A running sshd started by {@link startSshdServer}. */
export interface SshdServer {
  readonly port: number;
  readonly dir: string;
  /** The server's public host key line. */
  readonly hostKey: string;
  /** The authorized private key (OpenSSH format). */
  readonly userKey: string;
  /** The listener and every sshd process under it (the per-connection ones), listener first. */
  pids(): number[];
  /** Continues and stops the listener and every sshd under it (only this server's), then cleans up. */
  stop(): Promise<void>;
}

export function startSshdServer(): Promise<SshdServer>;
