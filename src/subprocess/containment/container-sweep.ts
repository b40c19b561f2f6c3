import { isSameLiveProcess } from '../identity.js';
import { type ContainerEngine, findEngine, isGone, removeArgs, runEngine } from './container-engine.js';
import { type ContainerOrigin, originOf, processOf, RUNTIME_LABEL } from './container-labels.js';

/** One container of a dead runtime that the sweep removed, or tried to (X6, K3). */
export interface RecoveredContainer {
  readonly engine: ContainerEngine;
  readonly id: string;
  readonly name: string;
  /** The owner it was placed for (its registry key, `o1`). */
  readonly owner: string;
  /** `null` when removed; else the engine's own error (the container is still there). */
  readonly error: string | null;
}

/** A container carrying the runtime label, as the engine listed it. */
export interface LabelledContainer {
  readonly engine: ContainerEngine;
  readonly id: string;
  readonly name: string;
  readonly origin: ContainerOrigin;
}

/** Bound on one `ps` or `rm` of the sweep: a stuck engine must not hold a runtime's start. */
const ENGINE_TIMEOUT_MS = 15_000;
const ENGINES: readonly ContainerEngine[] = ['podman', 'docker'];

/**
 * Every container, of each engine on the PATH, whose labels name a runtime's process: one
 * `ps -a --filter label=tether.runtime --format json` per engine, in parallel. An engine that is
 * not installed costs nothing (no process is started); one whose daemon is not running (docker
 * without dockerd) has no containers; any other failure is a `TETHER_RECOVERY` warning, and its
 * containers stay where they are.
 *
 * @example
 * ```ts
 * for (const c of await listLabelledContainers()) console.log(c.engine, c.name, c.origin.runtimeId);
 * ```
 */
export async function listLabelledContainers(): Promise<LabelledContainer[]> {
  const lists = await Promise.all(
    ENGINES.map(async (engine) => {
      const program = findEngine(engine);
      if (program === null) return [];
      const r = await runEngine(
        [program, 'ps', '-a', '--filter', `label=${RUNTIME_LABEL}`, '--format', 'json'],
        { timeoutMs: ENGINE_TIMEOUT_MS },
      );
      if (r.code !== 0) {
        if (!/cannot connect to the docker daemon|is the docker daemon running/i.test(r.stderr)) {
          process.emitWarning(`tether: listing ${engine} containers failed: ${r.stderr}`, {
            code: 'TETHER_RECOVERY',
          });
        }
        return [];
      }
      return parseListing(engine, r.stdout);
    }),
  );
  return lists.flat();
}

/**
 * Removes the containers of one dead runtime (its ledger record's id, pid and start time; the
 * labels must name the same process, and that process must be dead now). Every other
 * container is left alone: a live runtime's, one whose labels name another process.
 *
 * @example
 * ```ts
 * const removed = await removeContainersOf(listed, { runtimeId, pid, startTime });
 * ```
 */
export async function removeContainersOf(
  listed: readonly LabelledContainer[],
  runtime: { readonly runtimeId: string; readonly pid: number; readonly startTime: number | null },
): Promise<RecoveredContainer[]> {
  const theirs = listed.filter(
    ({ origin }) =>
      origin.runtimeId === runtime.runtimeId &&
      origin.pid === runtime.pid &&
      origin.startTime === runtime.startTime &&
      !isSameLiveProcess(processOf(origin)),
  );
  return Promise.all(theirs.map(removeListed));
}

async function removeListed(c: LabelledContainer): Promise<RecoveredContainer> {
  const program = findEngine(c.engine) ?? c.engine;
  const r = await runEngine([program, ...removeArgs(c.engine, c.id)], { timeoutMs: ENGINE_TIMEOUT_MS });
  const removed = r.code === 0 || isGone(r.stderr);
  return {
    engine: c.engine,
    id: c.id,
    name: c.name,
    owner: c.origin.owner,
    error: removed ? null : r.stderr,
  };
}

// podman prints one JSON array (Labels an object, Names an array); docker one object per line
// (Labels "k=v,k=v", Names a string).
function parseListing(engine: ContainerEngine, stdout: string): LabelledContainer[] {
  const text = stdout.trim();
  if (text === '') return [];
  let rows: unknown[];
  try {
    rows = text.startsWith('[')
      ? (JSON.parse(text) as unknown[])
      : text.split('\n').map((line) => JSON.parse(line) as unknown);
  } catch {
    process.emitWarning(`tether: ${engine} ps printed what is not JSON: ${text.slice(0, 200)}`, {
      code: 'TETHER_RECOVERY',
    });
    return [];
  }
  const out: LabelledContainer[] = [];
  for (const row of rows) {
    if (typeof row !== 'object' || row === null) continue;
    const r = row as Record<string, unknown>;
    const id = typeof r.Id === 'string' ? r.Id : typeof r.ID === 'string' ? r.ID : null;
    const names = Array.isArray(r.Names) ? r.Names.join(',') : typeof r.Names === 'string' ? r.Names : '';
    const origin = originOf(labelsOf(r.Labels));
    if (id !== null && origin !== null) out.push({ engine, id, name: names, origin });
  }
  return out;
}

function labelsOf(value: unknown): Record<string, string> {
  if (typeof value === 'string') {
    const labels: Record<string, string> = {};
    for (const pair of value.split(',')) {
      const at = pair.indexOf('=');
      if (at > 0) labels[pair.slice(0, at)] = pair.slice(at + 1);
    }
    return labels;
  }
  if (typeof value !== 'object' || value === null) return {};
  return Object.fromEntries(
    Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
}
