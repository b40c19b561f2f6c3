import { mkdirSync, mkdtempSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TetherError } from '../errors.js';
import { isSameLiveProcess, readIdentity } from '../subprocess/identity.js';
import type { ProcessIdentity, SubprocessHandle, SubprocessProvider } from '../subprocess/types.js';
import { enclaveArgs } from './bwrap-args.js';
import { type Confinement, identityOf } from './sandbox-options.js';
import { namespacesRefused, type SandboxTools } from './sandbox-tools.js';

/**
 * One owner's standing set of namespaces (K5, A3): made once by bubblewrap, entered by every
 * command, job and terminal of that owner, ended with it. Its pid 1 (`holder`) is what
 * every entering process joins; `alive` turns false when the enclave ended, for whatever reason.
 */
export interface Enclave {
  /** The enclave's pid 1, as the host sees it, with its start time. */
  readonly holder: ProcessIdentity;
  /** True while pid 1 is the process we started (re-read from /proc: a reused pid is not it). */
  alive(): boolean;
  /** Kills every process inside (pid 1's death ends the namespace) and verifies the tree is gone. */
  dispose(): Promise<void>;
}

/**
 * Starts an enclave through `inner` (so containment and markers apply to it like to any
 * tree) and resolves once bubblewrap built every mount and the holder runs. Rejects
 * SANDBOX_UNAVAILABLE with bubblewrap's words when the namespaces are refused.
 *
 * @example
 * ```ts
 * const enclave = await startEnclave(localProvider, tools, confinement, '/work/repo');
 * // tether-spawner --enter <enclave.holder…> …
 * await enclave.dispose();
 * ```
 */
export async function startEnclave(
  inner: SubprocessProvider,
  tools: SandboxTools,
  confinement: Confinement,
  cleanupGraceMs: number,
): Promise<Enclave> {
  // An empty file nobody may read, to bind over denied files; the bind keeps it after unlink.
  // `stage` stays an empty directory on the host: the idmapped roots are mounted on it only in
  // the private mount namespace of the process that becomes bubblewrap (idmap-mode.h).
  const scratch = mkdtempSync(join(tmpdir(), 'tether-enclave-'));
  const unreadable = join(scratch, 'denied');
  writeFileSync(unreadable, '', { mode: 0o000 });
  const stage = join(scratch, 'roots');
  mkdirSync(stage);
  let handle: SubprocessHandle | null = null;
  try {
    handle = await inner.spawn({
      argv: bubblewrapArgv(tools, confinement, unreadable, stage),
      cwd: '/',
      stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
      cleanupGraceMs,
    });
    const holder = await holderOf(handle);
    const running = handle;
    let ended = false;
    void running.exited.then(() => {
      ended = true;
    });
    return {
      holder,
      alive: () => !ended && isSameLiveProcess(holder),
      async dispose() {
        await running.kill();
      },
    };
  } catch (error) {
    await handle?.kill();
    throw error;
  } finally {
    // Never recursive through `stage`: were a root still mounted there, its files would go.
    rmSync(unreadable, { force: true });
    rmdirQuietly(stage);
    rmdirQuietly(scratch);
  }
}

// A6: as root, the writable roots (read-only mode: the workspace) are idmapped — each owner's
// files shown as the sandbox uid's, its writes stored as the owner's (and git inside sees a
// repository of its own uid) — by the spawner binary, which then execs bubblewrap.
function bubblewrapArgv(
  tools: SandboxTools,
  confinement: Confinement,
  unreadable: string,
  stage: string,
): [string, ...string[]] {
  const { writableRoots, uid, mode } = confinement.description;
  const mapped =
    mode === 'workspace-write' ? writableRoots : mode === 'read-only' ? [confinement.workspace] : [];
  if (identityOf(confinement.description) === null || mapped.length === 0) {
    return [tools.bwrap, ...enclaveArgs(confinement, unreadable, new Map(), tools.enter)];
  }
  const owners = mapped.flatMap((root) => {
    const { uid: ownerUid, gid: ownerGid } = statSync(root);
    return [root, String(ownerUid), String(ownerGid)];
  });
  const staged = new Map(mapped.map((root, i) => [root, join(stage, String(i))]));
  return [
    tools.enter,
    '--idmap',
    stage,
    String(uid),
    String(uid),
    ...owners,
    '--',
    tools.bwrap,
    ...enclaveArgs(confinement, unreadable, staged, tools.enter),
  ];
}

function rmdirQuietly(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {}
}

// Reads bubblewrap's info JSON (the child pid) from stdout and the holder's `ready` from stderr.
function holderOf(handle: SubprocessHandle): Promise<ProcessIdentity> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      fn();
    };
    const check = () => {
      const pid = /"child-pid":\s*(\d+)/.exec(out)?.[1];
      if (pid === undefined || !/^ready$/m.test(err)) return;
      const identity = readIdentity(Number(pid));
      settle(() =>
        identity === null
          ? reject(new TetherError('SANDBOX_UNAVAILABLE', `the sandbox's pid 1 (${pid}) vanished at start`))
          : resolve(identity),
      );
    };
    // Both streams are read to their end (never left to block a writer); only the start matters.
    handle.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      if (out.length < 4096) out += chunk;
      check();
    });
    handle.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      if (err.length < 4096) err += chunk;
      check();
    });
    void handle.exited.then((exit) => {
      // Let stderr finish so bubblewrap's reason is in the message.
      setImmediate(() =>
        settle(() =>
          reject(namespacesRefused(err.trim() || `bwrap exited with ${exit.exitCode ?? exit.signal}`)),
        ),
      );
    });
  });
}
