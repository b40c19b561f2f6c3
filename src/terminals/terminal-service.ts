import { randomBytes } from 'node:crypto';
import { createActor, fromPromise, type InspectionEvent } from 'xstate';
import { terminalMachine } from '../../machines/terminal.js';
import { CompletionHub } from '../completions/completion-hub.js';
import { assertArgument, TetherError } from '../errors.js';
import type { OwnerRegistry } from '../owners/owner-registry.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import type { EnvPolicy } from '../subprocess/env.js';
import { createLocalProvider } from '../subprocess/local-provider.js';
import type { SubprocessProvider, TerminalHandle, TerminalSpawnSpec } from '../subprocess/types.js';
import { signalForeground } from './foreground-signal.js';
import { renderScreen } from './screen.js';
import { SHELL_RC_ENV } from './shell-protocol.js';
import { executeInTerminal } from './terminal-execute.js';
import { TerminalRecord } from './terminal-record.js';
import { proofBeforeInput, waitForReason } from './terminal-send.js';
import {
  TERMINAL_SIGNALS,
  type TerminalExit,
  type TerminalOpenOptions,
  type TerminalService,
} from './terminal-types.js';

export interface TerminalServiceOptions {
  readonly owners: OwnerRegistry;
  readonly defaults: {
    readonly shell: string;
    readonly cwd: string;
    readonly cleanupGraceMs: number;
  };
  /**
   * Where terminals are spawned (S2): a provider, or a function returning the one for an owner
   * (its placement, X4; a runtime's hot reload swaps the default). By default the service makes a local provider with `env`
   * and disposes it with itself; a given provider is the caller's.
   */
  readonly provider?: SubprocessProvider | ((owner: AgentOwnerToken) => SubprocessProvider);
  /** The default local provider's env policy (S3). */
  readonly env?: EnvPolicy;
  /** T3: characters of output each terminal retains for `read`; default 1,048,576. */
  readonly retentionChars?: number;
  /** Open terminals per owner; default 8. One more fails with TERMINAL_LIMIT. */
  readonly maxPerOwner?: number;
  readonly inspect?: (event: InspectionEvent) => void;
}

const ENDED_KEPT = 256;

/**
 * Creates the terminal service (SPEC section 4): every terminal is an actor of the terminal
 * machine; PTYs live in one supervised worker; `send` reports why it returned (T5, T6),
 * `execute` runs one command to its nonce-marked end (T7), `close` returns when the whole tree
 * is verified gone (T4).
 *
 * @example
 * ```ts
 * const terminals = createTerminalService({ owners, defaults: { shell: '/bin/bash', cwd: '/tmp', cleanupGraceMs: 2000 } });
 * const t = await terminals.open(owner);
 * console.log((await terminals.execute(owner, t.id, 'echo hi')).output); // 'hi\n'
 * await terminals.dispose();
 * ```
 */
export function createTerminalService(options: TerminalServiceOptions): TerminalService {
  const { owners, defaults } = options;
  const retentionChars = options.retentionChars ?? 1_048_576;
  const maxPerOwner = options.maxPerOwner ?? 8;
  const given = options.provider;
  const own = given === undefined ? createLocalProvider(options.env ? { env: options.env } : {}) : null;
  const currentProvider: (owner: AgentOwnerToken) => SubprocessProvider =
    typeof given === 'function' ? given : () => own ?? given!;
  /** Every provider a terminal was opened with: their PTY workers are this service's to report (D3). */
  const used = new Set<SubprocessProvider>();
  const records = new Map<string, TerminalRecord>();
  /**
   * Recently ended terminals, so a late call hears "it ended", not "no such terminal", and a
   * new session-exit listener can be replayed the exits nobody heard (S5).
   */
  const ended = new Map<
    string,
    { readonly ownerKey: string; readonly reason: string; readonly exit: TerminalExit | null }
  >();
  const exits = new CompletionHub<TerminalExit>((error, exit) =>
    process.emitWarning(`tether: a session-exit listener for terminal ${exit.id} failed: ${String(error)}`, {
      code: 'TETHER_TERMINAL',
    }),
  );
  let busy = 0;
  /** Opens in flight per owner: they count against the cap before their PTY exists. */
  const opening = new Map<string, number>();
  let disposing: Promise<void> | null = null;

  const lookup = (owner: AgentOwnerToken, id: string, retiredOk = false): TerminalRecord => {
    const token = retiredOk ? owners.assertKnown(owner) : owners.assertLive(owner);
    assertArgument(typeof id === 'string' && id.length > 0, 'terminal id must be a non-empty string');
    const record = records.get(id);
    const ownerKey = owners.keyOf(token);
    const gone = ended.get(id);
    if (record === undefined && gone?.ownerKey === ownerKey) {
      throw new TetherError('TERMINAL_CLOSED', `terminal '${id}' has ended (${gone.reason}); open a new one`);
    }
    // T9: another owner's terminal is indistinguishable from one that does not exist.
    if (record === undefined || record.ownerKey !== ownerKey) {
      throw new TetherError('TERMINAL_NOT_FOUND', `no terminal '${id}' for this owner; list() shows yours`);
    }
    return record;
  };

  // T2: one send or execute at a time, decided by the machine.
  const withTurn = async <T>(
    record: TerminalRecord,
    activity: 'send' | 'execute',
    work: () => Promise<T>,
  ) => {
    const snapshot = record.actor.getSnapshot();
    if (!snapshot.can({ type: 'BEGIN', activity })) {
      if (record.state === 'busy') {
        throw new TetherError(
          'TERMINAL_BUSY',
          `terminal '${record.id}' is busy with a ${snapshot.context.activity}; wait for it`,
        );
      }
      throw new TetherError('TERMINAL_CLOSED', `terminal '${record.id}' is ${record.state}; open a new one`);
    }
    record.actor.send({ type: 'BEGIN', activity });
    busy++;
    try {
      return await work();
    } finally {
      busy--;
      // A session that exited meanwhile already took the terminal to closing/closed.
      if (record.actor.getSnapshot().status === 'active') record.actor.send({ type: 'END' });
    }
  };

  const closeRecord = (record: TerminalRecord): Promise<void> => {
    record.actor.send({ type: 'CLOSE' }); // ignored once closing: the machine's guard
    return record.closed;
  };

  const service: TerminalService = {
    async open(owner, opts: TerminalOpenOptions = {}) {
      if (disposing) throw new TetherError('RUNTIME_DISPOSED', 'the runtime was disposed; create a new one');
      const token = owners.assertLive(owner);
      const ownerKey = owners.keyOf(token);
      const spec = openSpec(opts, defaults);
      const provider = currentProvider(token);
      const mine =
        [...records.values()].filter((r) => r.ownerKey === ownerKey).length + (opening.get(ownerKey) ?? 0);
      if (mine >= maxPerOwner) {
        throw new TetherError(
          'TERMINAL_LIMIT',
          `this owner already has ${mine} open terminals (the limit); close one first`,
        );
      }
      const id = `term_${randomBytes(12).toString('base64url')}`;
      let record: TerminalRecord | undefined;
      const closer = fromPromise<void, { readonly terminalId: string }>(async () => {
        const verdict = await record!.pty.kill();
        if (verdict.status !== 'quiescent') {
          process.emitWarning(
            `tether: terminal ${id} left processes it could not kill: ${verdict.escaped.join(', ')}`,
          );
        }
      });
      const actor = createActor(terminalMachine.provide({ actors: { closer } }), {
        input: { terminalId: id, ownerKey },
        systemId: `terminal:${id}`,
        ...(options.inspect ? { inspect: options.inspect } : {}),
      }).start();
      opening.set(ownerKey, (opening.get(ownerKey) ?? 0) + 1);
      let pty: TerminalHandle;
      try {
        used.add(provider);
        pty = await provider.spawnTerminal(spec);
      } catch (err) {
        actor.send({ type: 'OPEN_FAILED' });
        throw err;
      } finally {
        opening.set(ownerKey, opening.get(ownerKey)! - 1);
      }
      record = new TerminalRecord({
        id,
        ownerKey,
        actor,
        spec,
        provider,
        hidden: opts.hidden === true,
        pty,
        retentionChars,
        openedAt: Date.now(),
      });
      records.set(id, record);
      void record.closed.then(() => {
        records.delete(id);
        const exit = record!.endReason === 'session_exit' && !record!.hidden ? record!.exit : null;
        ended.set(id, { ownerKey, reason: exit ? 'its session exited' : 'closed', exit });
        if (ended.size > ENDED_KEPT) {
          const oldest = ended.keys().next().value!;
          ended.delete(oldest);
          exits.forget(oldest);
        }
        if (exit) exits.publish(ownerKey, exit);
      });
      actor.send({ type: 'OPENED' });
      watchExit(record);
      return record.info();
    },

    async send(owner, id, input, opts = {}) {
      const record = lookup(owner, id);
      assertArgument(typeof input === 'string', 'input must be a string (use "\\r" or "\\n" for Enter)');
      const settleMs = opts.settleMs ?? 500;
      const timeoutMs = opts.timeoutMs ?? 30_000;
      assertArgument(
        Number.isFinite(settleMs) && settleMs >= 0,
        `settleMs must be a finite number >= 0, got ${settleMs}`,
      );
      assertArgument(
        Number.isFinite(timeoutMs) && timeoutMs > 0,
        `timeoutMs must be a positive finite number, got ${timeoutMs}`,
      );
      return withTurn(record, 'send', async () => {
        const startedAt = performance.now();
        const from = record.output.end;
        const pty = record.pty;
        const before = proofBeforeInput(pty);
        await pty.write(input);
        const waitReason = await waitForReason(pty, before, { settleMs, timeoutMs, startedAt });
        const page = record.output.read(from, Number.MAX_SAFE_INTEGER);
        return { output: page.text, cursor: page.cursor, lossy: page.lossy, waitReason };
      });
    },

    async execute(owner, id, command, opts = {}) {
      const record = lookup(owner, id);
      assertArgument(typeof command === 'string', 'command must be a string');
      const timeoutMs = opts.timeoutMs ?? 120_000;
      assertArgument(
        Number.isFinite(timeoutMs) && timeoutMs > 0,
        `timeoutMs must be a positive finite number, got ${timeoutMs}`,
      );
      assertArgument(
        opts.signal === undefined || opts.signal instanceof AbortSignal,
        'signal must be an AbortSignal',
      );
      return withTurn(record, 'execute', async () => {
        record.executing = true;
        try {
          const from = record.output.end;
          const result = await executeInTerminal(
            {
              pty: record.pty,
              resetShell: async () => {
                await record.pty.kill();
                record.replacePty(await record.provider.spawnTerminal(record.spec));
                record.actor.send({ type: 'SHELL_RESET' });
                watchExit(record);
              },
            },
            command,
            timeoutMs,
            opts.signal,
          );
          record.output.read(from, Number.MAX_SAFE_INTEGER); // what execute covered is consumed
          return result;
        } finally {
          record.executing = false;
        }
      });
    },

    async read(owner, id, cursor, maxChars = 32_000) {
      const record = lookup(owner, id, true);
      assertArgument(
        Number.isSafeInteger(cursor) && cursor >= 0,
        `cursor must be an integer >= 0, got ${cursor}`,
      );
      assertArgument(
        Number.isSafeInteger(maxChars) && maxChars > 0,
        `maxChars must be a positive integer, got ${maxChars}`,
      );
      const page = record.output.read(cursor, maxChars);
      return { text: page.text, cursor: page.cursor, lossy: page.lossy };
    },

    async screen(owner, id) {
      const record = lookup(owner, id, true);
      return renderScreen(record.screenTail.text(), record.spec.cols, record.spec.rows);
    },

    async signal(owner, id, signal) {
      const record = lookup(owner, id);
      assertArgument(
        (TERMINAL_SIGNALS as readonly string[]).includes(signal),
        `signal must be one of ${TERMINAL_SIGNALS.join(', ')}, got ${String(signal)}`,
      );
      if (!(await signalForeground(record.pty, signal))) {
        throw new TetherError('TERMINAL_CLOSED', `terminal '${id}' has no live foreground process to signal`);
      }
    },

    async close(owner, id) {
      let record: TerminalRecord;
      try {
        record = lookup(owner, id, true);
      } catch (err) {
        if (err instanceof TetherError && err.code === 'TERMINAL_CLOSED') return; // closing twice is fine
        throw err;
      }
      await closeRecord(record);
    },

    async list(owner) {
      const key = owners.keyOf(owners.assertLive(owner));
      return [...records.values()].filter((r) => r.ownerKey === key && !r.hidden).map((r) => r.info());
    },

    onSessionExit(owner, listener) {
      const key = owners.keyOf(owners.assertLive(owner));
      assertArgument(typeof listener === 'function', 'listener must be a function (exit) => void');
      return exits.subscribe(key, listener, () =>
        [...ended.values()].flatMap((e) => (e.ownerKey === key && e.exit ? [e.exit] : [])),
      );
    },

    async drainOwner(owner) {
      const key = owners.keyOf(owners.assertKnown(owner));
      await Promise.all([...records.values()].filter((r) => r.ownerKey === key).map(closeRecord));
    },

    stats: () => ({
      open: records.size,
      busy,
      hostAlive: [...used].some((provider) => (provider.workers ?? 0) > 0),
      listeners: exits.listeners,
      deliveries: exits.deliveries,
    }),

    dispose() {
      disposing ??= (async () => {
        await Promise.all([...records.values()].map(closeRecord));
        await exits.settle();
        exits.clear();
        await own?.dispose();
      })();
      return disposing;
    },
  };

  // A session that ends on its own closes its terminal, unless execute is replacing the shell.
  function watchExit(record: TerminalRecord): void {
    const pty = record.pty;
    void pty.exited.then(({ exitCode, signal, reason }) => {
      if (record.pty !== pty || record.executing) return;
      if (record.actor.getSnapshot().can({ type: 'SESSION_EXIT' })) {
        const { id, shell, cwd, pid, openedAt } = record.info();
        record.exit = { id, shell, cwd, pid, openedAt, endedAt: Date.now(), exitCode, signal, reason };
      }
      record.actor.send({ type: 'SESSION_EXIT' });
    });
  }

  return service;
}

// Resolves the spawn spec of an `open` call: interactive bash with our rc (in its env); the env is an
// overlay the provider applies to its sanitized host env (S1, S3).
function openSpec(
  opts: TerminalOpenOptions,
  defaults: TerminalServiceOptions['defaults'],
): TerminalSpawnSpec {
  assertArgument(typeof opts === 'object' && opts !== null, 'open options must be an object');
  assertArgument(
    opts.hidden === undefined || typeof opts.hidden === 'boolean',
    `hidden must be a boolean, got ${typeof opts.hidden}`,
  );
  const shell = opts.shell ?? defaults.shell;
  const cwd = opts.cwd ?? defaults.cwd;
  const cols = opts.cols ?? 120;
  const rows = opts.rows ?? 40;
  assertArgument(typeof shell === 'string' && shell.length > 0, 'shell must be a non-empty path');
  assertArgument(
    Number.isSafeInteger(cols) && cols > 0 && cols <= 1000,
    `cols must be an integer in 1..1000, got ${cols}`,
  );
  assertArgument(
    Number.isSafeInteger(rows) && rows > 0 && rows <= 1000,
    `rows must be an integer in 1..1000, got ${rows}`,
  );
  const isBash = /(^|\/)bash$/.test(shell);
  const argv: [string, ...string[]] = isBash ? [shell, '--noprofile', '--norc', '-i'] : [shell];
  const env = {
    TERM: 'xterm-256color',
    PAGER: 'cat',
    GIT_PAGER: 'cat',
    ...opts.env,
    ...(isBash ? SHELL_RC_ENV : {}),
  };
  return { argv, cwd, env, cols, rows, cleanupGraceMs: defaults.cleanupGraceMs };
}
