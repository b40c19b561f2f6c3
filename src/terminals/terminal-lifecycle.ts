import { randomBytes } from 'node:crypto';
import { createActor, fromPromise } from 'xstate';
import { terminalMachine } from '../../machines/terminal.js';
import { assertArgument, TetherError } from '../errors.js';
import { verdictFact } from '../observe/verdict-fact.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import { decisionPassed } from '../policy/policy-passed.js';
import type { SubprocessProvider, TerminalHandle, TerminalSpawnSpec } from '../subprocess/types.js';
import { screenFact } from './screen.js';
import { TerminalRecord } from './terminal-record.js';
import { openSpec } from './terminal-spec.js';
import type { TerminalTable } from './terminal-table.js';
import type {
  TerminalExit,
  TerminalInfo,
  TerminalOpenOptions,
  TerminalSubscription,
} from './terminal-types.js';

/**
 * A1: opening is judged as its shell, hidden or not (A6: `open(owner, { hidden: true })` is no
 * way around the policy). The persistent bash's own open is the one exception: it decided the
 * command the shell is opened for just before (action `persistent-bash`) and passes that
 * decision on (`passDecision`), so the approver is not asked twice for one command, and a
 * policy that allows the command but has no rule for the shell still runs it. A runtime
 * disposed while the approver thought opens nothing.
 */
async function decideOpen(
  table: TerminalTable,
  owner: AgentOwnerToken,
  opts: TerminalOpenOptions,
): Promise<void> {
  const { decide, defaults } = table.config;
  assertArgument(typeof opts === 'object' && opts !== null, 'open options must be an object');
  if (decide === undefined || decisionPassed(opts)) return;
  const shell = opts.shell ?? defaults.shell;
  await decide({ action: 'terminal.open', owner, command: shell, cwd: opts.cwd ?? defaults.cwd });
  if (table.disposing)
    throw new TetherError('RUNTIME_DISPOSED', 'the runtime was disposed; create a new one');
}

/**
 * `open` (T1, T4): checks the owner's cap (opens in flight count), starts the terminal's actor,
 * spawns the shell through the owner's provider (its placement, X4), and wires the record's end: a closed terminal
 * is remembered and its session exit published. The machine's `closer` is the provider's tree
 * kill and its verdict (S4).
 *
 * @example
 * ```ts
 * const info = await openTerminal(table, owner, { cols: 80 });
 * ```
 */
export async function openTerminal(
  table: TerminalTable,
  owner: AgentOwnerToken,
  opts: TerminalOpenOptions,
  adopted?: AdoptedTerminal,
): Promise<TerminalInfo> {
  if (table.disposing)
    throw new TetherError('RUNTIME_DISPOSED', 'the runtime was disposed; create a new one');
  if (adopted === undefined) await decideOpen(table, owner, opts); // A1: before anything starts
  const { owners, defaults, currentProvider, maxPerOwner, retentionChars, inspect } = table.config;
  const token = owners.assertLive(owner);
  const ownerKey = owners.keyOf(token);
  const id = adopted?.id ?? `term_${randomBytes(12).toString('base64url')}`;
  if (table.records.has(id)) throw new TetherError('TERMINAL_BUSY', `terminal '${id}' is already open here`);
  const spec =
    adopted?.spec ?? taggedSpec(openSpec(opts, defaults, table.config.identityEnv(token)), id, opts);
  const provider = adopted?.provider ?? currentProvider(token);
  const mine =
    [...table.records.values()].filter((r) => r.ownerKey === ownerKey).length +
    (table.opening.get(ownerKey) ?? 0);
  if (mine >= maxPerOwner) {
    throw new TetherError(
      'TERMINAL_LIMIT',
      `this owner already has ${mine} open terminals (the limit); close one first`,
    );
  }
  let record: TerminalRecord | undefined;
  const closer = fromPromise<void, { readonly terminalId: string }>(async () => {
    const verdict = await record!.pty.kill();
    table.config.facts.emit(verdictFact(`terminal:${id}`, verdict)); // V1
    if (verdict.status !== 'quiescent') {
      process.emitWarning(
        `tether: terminal ${id} left processes it could not kill: ${verdict.escaped.join(', ')}`,
      );
    }
  });
  const actor = createActor(terminalMachine.provide({ actors: { closer } }), {
    input: { terminalId: id, ownerKey },
    systemId: `terminal:${id}`,
    ...(inspect ? { inspect } : {}),
  }).start();
  table.opening.set(ownerKey, (table.opening.get(ownerKey) ?? 0) + 1);
  let pty: TerminalHandle;
  try {
    table.used.add(provider);
    pty = await (adopted?.pty() ?? provider.spawnTerminal(spec));
  } catch (err) {
    actor.send({ type: 'OPEN_FAILED' });
    throw err;
  } finally {
    table.opening.set(ownerKey, table.opening.get(ownerKey)! - 1);
  }
  const opened = new TerminalRecord({
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
  record = opened;
  table.records.set(id, opened);
  const unwatch = table.config.facts.watch(`terminal:${id}`, () => screenFact(opened), true);
  void opened.closed.then(() => {
    unwatch();
    table.forget(opened);
  });
  actor.send({ type: 'OPENED' });
  table.watchExit(opened);
  return opened.info();
}

// K6: what a persisted runtime's successor lists of a terminal (hidden shells are not adoptable).
function taggedSpec(spec: TerminalSpawnSpec, id: string, opts: TerminalOpenOptions): TerminalSpawnSpec {
  if (opts.hidden === true) return spec;
  return { ...spec, tag: { kind: 'terminal', id, label: spec.argv[0], cols: spec.cols, rows: spec.rows } };
}

/**
 * A terminal a previous runtime opened, taken over (K6): its id, the spec it was opened with (as
 * far as the helper kept it), its provider and the attach that yields its handle.
 */
export interface AdoptedTerminal {
  readonly id: string;
  readonly spec: TerminalSpawnSpec;
  readonly provider: SubprocessProvider;
  pty(): Promise<TerminalHandle>;
}

/**
 * `close` (T4): resolves once the terminal's tree was verified gone; closing twice is fine.
 *
 * @example
 * ```ts
 * await closeTerminal(table, owner, id);
 * ```
 */
export async function closeTerminal(table: TerminalTable, owner: AgentOwnerToken, id: string): Promise<void> {
  let record: TerminalRecord;
  try {
    record = table.lookup(owner, id, true);
  } catch (err) {
    if (err instanceof TetherError && err.code === 'TERMINAL_CLOSED') return; // closing twice is fine
    throw err;
  }
  await table.closeRecord(record);
}

/**
 * `drainOwner` (O2, D1): closes every terminal of a live or retired owner.
 *
 * @example
 * ```ts
 * await drainTerminals(table, lease.token);
 * ```
 */
export async function drainTerminals(table: TerminalTable, owner: AgentOwnerToken): Promise<void> {
  const { owners } = table.config;
  const key = owners.keyOf(owners.assertKnown(owner));
  await Promise.all(
    [...table.records.values()].filter((r) => r.ownerKey === key).map((r) => table.closeRecord(r)),
  );
}

/**
 * `onSessionExit` (S5): joins first, then replays recent exits no listener of the owner heard.
 *
 * @example
 * ```ts
 * using sub = subscribeExits(table, owner, (exit) => console.log(exit.exitCode));
 * ```
 */
export function subscribeExits(
  table: TerminalTable,
  owner: AgentOwnerToken,
  listener: (exit: TerminalExit) => void | Promise<void>,
): TerminalSubscription {
  const { owners } = table.config;
  const key = owners.keyOf(owners.assertLive(owner));
  assertArgument(typeof listener === 'function', 'listener must be a function (exit) => void');
  return table.exits.subscribe(key, listener, () =>
    [...table.ended.values()].flatMap((e) => (e.ownerKey === key && e.exit ? [e.exit] : [])),
  );
}
