import { setImmediate } from 'node:timers/promises';
import { TetherError } from '../errors.js';
import type { JobInfo, JobService, JobSpec } from '../jobs/job-types.js';
import type { FactSink } from '../observe/fact-types.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import type { Adopted } from '../remote/helper-provider.js';
import type { SubprocessHandle, TerminalSpawnSpec } from '../subprocess/types.js';
import { SHELL_RC_ENV } from '../terminals/shell-protocol.js';
import type { AdoptedTerminal } from '../terminals/terminal-lifecycle.js';
import type { TerminalInfo } from '../terminals/terminal-types.js';
import type { PersistHelper } from './persist-helper.js';
import type { ListedTree, PersistedTree } from './persisted-tree.js';

/** What {@link createPersistence} drives. */
export interface PersistenceDeps {
  readonly helper: PersistHelper;
  readonly jobs: Pick<JobService, 'start'>;
  readonly openAdopted: (owner: AgentOwnerToken, adopted: AdoptedTerminal) => Promise<TerminalInfo>;
  /** The job producer for an adopted process (the shell job's, C3/J1). */
  readonly jobSpec: (label: string, handle: SubprocessHandle) => JobSpec;
  readonly cleanupGraceMs: number;
  readonly facts: FactSink;
}

/** K6 on a runtime: what survived, and taking it over. */
export interface Persistence {
  resumable(): Promise<PersistedTree[]>;
  adoptJob(owner: AgentOwnerToken, id: string): Promise<JobInfo>;
  adoptTerminal(owner: AgentOwnerToken, id: string): Promise<TerminalInfo>;
  /** Adopts every tree whose previous owner was the agent session `sessionId`. */
  adoptSession(
    owner: AgentOwnerToken,
    sessionId: string,
  ): Promise<{ readonly jobs: readonly JobInfo[]; readonly terminals: readonly TerminalInfo[] }>;
}

/**
 * Lists and adopts the trees a previous runtime of the same persisted name left with the helper
 * (K6). An adopted job keeps its id and goes on from its cursor (its output as the helper kept
 * it, from the first byte it holds); an adopted terminal's kept output is replayed into its
 * screen. A tree is adopted at most once; an adopt that fails gives the tree back to the helper.
 *
 * @example
 * ```ts
 * const persistence = createPersistence({ helper, jobs, openAdopted, jobSpec, cleanupGraceMs: 2000, facts });
 * for (const t of await persistence.resumable()) if (t.kind === 'job') await persistence.adoptJob(owner, t.id);
 * ```
 */
export function createPersistence(deps: PersistenceDeps): Persistence {
  const { helper, facts } = deps;
  // Ids being adopted or adopted by this runtime: a second adopt of one is refused.
  const taken = new Set<string>();
  const publicOf = ({ tree: _tree, cols: _c, rows: _r, ...shown }: ListedTree): PersistedTree => shown;

  const find = async (kind: 'job' | 'terminal', id: unknown): Promise<ListedTree> => {
    const code = kind === 'job' ? 'JOB_NOT_FOUND' : 'TERMINAL_NOT_FOUND';
    if (typeof id !== 'string' || id.length === 0)
      throw new TetherError(
        'INVALID_ARGUMENT',
        `adopt takes the ${kind}'s id (a string from rt.resumable())`,
      );
    const found = taken.has(id)
      ? undefined
      : (await helper.list()).find((t) => t.kind === kind && t.id === id);
    if (found === undefined || taken.has(id)) {
      throw new TetherError(
        code,
        `no ${kind} '${id}' is waiting to be adopted (already adopted, killed after lingerMs, or never persisted); rt.resumable() lists those that are`,
      );
    }
    taken.add(id);
    return found;
  };
  // An adopt that failed after the attach: the tree goes back to waiting (and lingering).
  const giveBack = async (tree: ListedTree): Promise<void> => {
    taken.delete(tree.id);
    await helper.provider.detach(tree.tree.treeId).catch(() => {});
  };

  const adoptJob = async (owner: AgentOwnerToken, id: string): Promise<JobInfo> => {
    const tree = await find('job', id);
    let adopted: Adopted<SubprocessHandle>;
    try {
      adopted = await helper.provider.adoptProcess(tree.tree, {
        argv: [tree.label],
        cwd: '/',
        stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
        cleanupGraceMs: deps.cleanupGraceMs,
      });
    } catch (err) {
      taken.delete(id);
      throw err;
    }
    try {
      const info = await deps.jobs.start(owner, deps.jobSpec(tree.label, adopted.handle), {
        resume: { id, outputStart: tree.cursor },
      });
      // Every byte the helper held when it was listed is in the job before adopt returns: any
      // cursor the previous owner had can be read from at once.
      await adopted.caughtUp;
      await setImmediate();
      facts.emit({ type: 'job.adopted', actor: `job:${id}`, previousOwner: tree.owner, cursor: tree.cursor });
      return info;
    } catch (err) {
      await giveBack(tree);
      throw err;
    }
  };

  const adoptTerminal = async (owner: AgentOwnerToken, id: string): Promise<TerminalInfo> => {
    const tree = await find('terminal', id);
    const bash = /(^|\/)bash$/.test(tree.label);
    const spec: TerminalSpawnSpec = {
      argv: [tree.label || 'sh'],
      cwd: '/',
      cols: tree.cols,
      rows: tree.rows,
      cleanupGraceMs: deps.cleanupGraceMs,
      env: bash ? SHELL_RC_ENV : {},
      tag: { kind: 'terminal', id, label: tree.label, cols: tree.cols, rows: tree.rows },
    };
    let attached = false;
    let caughtUp: Promise<void> = Promise.resolve();
    try {
      const info = await deps.openAdopted(owner, {
        id,
        spec,
        provider: helper.provider,
        pty: async () => {
          const pty = await helper.provider.adoptTerminal(tree.tree, spec);
          attached = true;
          caughtUp = pty.caughtUp;
          return pty.handle;
        },
      });
      await caughtUp; // the screen shows what the helper had when it was listed
      await setImmediate();
      facts.emit({ type: 'terminal.adopted', actor: `terminal:${id}`, previousOwner: tree.owner });
      return info;
    } catch (err) {
      if (attached) await giveBack(tree);
      else taken.delete(id);
      throw err;
    }
  };

  return {
    async resumable() {
      return (await helper.list()).filter((t) => !taken.has(t.id)).map(publicOf);
    },
    adoptJob,
    adoptTerminal,
    async adoptSession(owner, sessionId) {
      const mine = (await helper.list()).filter(
        (t) => t.owner === `session:${sessionId}` && !taken.has(t.id),
      );
      const jobs: JobInfo[] = [];
      const terminals: TerminalInfo[] = [];
      for (const tree of mine) {
        if (tree.kind === 'job') jobs.push(await adoptJob(owner, tree.id));
        else terminals.push(await adoptTerminal(owner, tree.id));
      }
      return { jobs, terminals };
    },
  };
}
