import type { InspectionEvent } from 'xstate';
import { type FactSink, NO_FACTS } from '../observe/fact-types.js';
import type { OwnerRegistry } from '../owners/owner-registry.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import type { PolicyStep } from '../policy/policy-types.js';
import type { EnvPolicy } from '../subprocess/env.js';
import { createLocalProvider } from '../subprocess/local-provider.js';
import type { SubprocessProvider } from '../subprocess/types.js';
import { executeCommand } from './terminal-execute.js';
import {
  type AdoptedTerminal,
  closeTerminal,
  drainTerminals,
  openTerminal,
  subscribeExits,
} from './terminal-lifecycle.js';
import { listTerminals, readTerminal, screenOf } from './terminal-read.js';
import { sendToTerminal, signalTerminal } from './terminal-send.js';
import { TerminalTable } from './terminal-table.js';
import type { TerminalInfo, TerminalOpenOptions, TerminalService } from './terminal-types.js';

/** The service as the composition root holds it: also opens terminals a predecessor left (K6). */
export interface TerminalServiceWithAdopt extends TerminalService {
  openAdopted(owner: AgentOwnerToken, adopted: AdoptedTerminal): Promise<TerminalInfo>;
}

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
  /**
   * The identity overlay of an owner's shells (S3: session and agent ids), applied last on the
   * spawn env. The composition root supplies it; none by default.
   */
  readonly identityEnv?: (owner: AgentOwnerToken) => Readonly<Record<string, string>>;
  readonly inspect?: (event: InspectionEvent) => void;
  /**
   * A1: the policy step, called at the entry of `open` (the shell), `execute` (the command) and
   * `send` (raw input) before anything happens; none: everything is allowed.
   */
  readonly decide?: PolicyStep;
  /** V1: where exits, kill verdicts and screens are reported. */
  readonly facts?: FactSink;
}

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
export function createTerminalService(options: TerminalServiceOptions): TerminalServiceWithAdopt {
  const given = options.provider;
  const own = given === undefined ? createLocalProvider(options.env ? { env: options.env } : {}) : null;
  const table = new TerminalTable({
    owners: options.owners,
    defaults: options.defaults,
    currentProvider: typeof given === 'function' ? given : () => own ?? given!,
    retentionChars: options.retentionChars ?? 1_048_576,
    maxPerOwner: options.maxPerOwner ?? 8,
    inspect: options.inspect,
    facts: options.facts ?? NO_FACTS,
    identityEnv: options.identityEnv ?? (() => ({})),
    decide: options.decide,
  });
  const closeAll = () => Promise.all([...table.records.values()].map((r) => table.closeRecord(r)));

  return {
    open: (owner, opts: TerminalOpenOptions = {}) => openTerminal(table, owner, opts),
    openAdopted: (owner, adopted) => openTerminal(table, owner, {}, adopted),
    send: async (owner, id, input, opts = {}) => sendToTerminal(table, owner, id, input, opts),
    execute: async (owner, id, command, opts = {}) => executeCommand(table, owner, id, command, opts),
    read: async (owner, id, cursor, maxChars = 32_000) => readTerminal(table, owner, id, cursor, maxChars),
    screen: async (owner, id) => screenOf(table, owner, id),
    signal: async (owner, id, signal) => signalTerminal(table, owner, id, signal),
    close: (owner, id) => closeTerminal(table, owner, id),
    list: async (owner) => listTerminals(table, owner),
    onSessionExit: (owner, listener) => subscribeExits(table, owner, listener),
    drainOwner: (owner) => drainTerminals(table, owner),
    stats: () => ({
      open: table.records.size,
      busy: table.busy,
      timers: table.timers.live,
      hostAlive: [...table.used].some((provider) => (provider.workers ?? 0) > 0),
      listeners: table.exits.listeners,
      deliveries: table.exits.deliveries,
    }),
    dispose() {
      table.disposing ??= (async () => {
        await closeAll();
        await table.exits.settle();
        table.exits.clear();
        table.ended.clear(); // every later call is RUNTIME_DISPOSED: nothing asks for them again
        await own?.dispose();
      })();
      return table.disposing;
    },
  };
}
