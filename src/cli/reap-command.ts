import { parseArgs } from 'node:util';
import { type RecoveredRuntime, reapDeadRuntimes } from '../subprocess/containment/reaper.js';
import { defaultStateDir } from '../subprocess/containment/runtime-boundary.js';
import { REAP_USAGE, UsageError } from './usage.js';

/**
 * `tether reap [--state-dir <dir>] [--grace <ms>] [--json]` (K3): kills what dead runtimes of the
 * state directory left — trees, cgroups, spills, the containers they placed owners in (X6) — and
 * says what it did. Exit 0 when everything was verified dead (or there was nothing), 1 when a
 * process could not be killed or a container could not be removed.
 *
 * @example
 * ```ts
 * process.exitCode = await reapCommand(['--state-dir', '/tmp/tether-state-0']);
 * ```
 */
export async function reapCommand(args: readonly string[]): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(args);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values } = parsed;
  if (values.help) {
    process.stdout.write(REAP_USAGE);
    return 0;
  }
  const graceMs = values.grace === undefined ? 2000 : Number(values.grace);
  if (!(Number.isSafeInteger(graceMs) && graceMs >= 0)) {
    throw new UsageError(`--grace takes a non-negative integer of milliseconds, got '${values.grace}'`);
  }
  const stateDir = values['state-dir'] ?? defaultStateDir();
  if (values.name !== undefined) return reapName(stateDir, values.name, graceMs, values.json === true);
  const reaped = await reapDeadRuntimes(stateDir, { graceMs });
  if (values.json) process.stdout.write(`${JSON.stringify({ stateDir, reaped }, null, 2)}\n`);
  else process.stdout.write(summary(stateDir, reaped));
  const left = (r: RecoveredRuntime) =>
    r.escaped.length > 0 || [...r.containers, ...r.pods].some((c) => c.error !== null);
  return reaped.some(left) ? 1 : 0;
}

// K6: `--name N` ends persisted runtime N's helper and every tree under it.
async function reapName(stateDir: string, name: string, graceMs: number, json: boolean): Promise<number> {
  const { reapPersisted } = await import('../persist/persist-reap.js');
  const r = await reapPersisted(stateDir, name, graceMs);
  const escaped = r.verdicts.filter((v) => v.status !== 'quiescent');
  if (json) process.stdout.write(`${JSON.stringify({ stateDir, persisted: r }, null, 2)}\n`);
  else if (!r.found)
    process.stdout.write(`tether reap: no helper of persisted runtime '${name}' runs in ${stateDir}\n`);
  else {
    const fate =
      escaped.length === 0 ? 'verified dead' : `NOT VERIFIED DEAD: ${escaped.map((v) => v.tree).join(', ')}`;
    process.stdout.write(
      `tether reap: persisted runtime '${name}': ${r.verdicts.length} tree(s) killed, ${fate}; helper ${r.ended ? 'ended' : 'STILL RUNNING'}\n`,
    );
  }
  return escaped.length > 0 || !r.ended ? 1 : 0;
}

function parse(args: readonly string[]) {
  return parseArgs({
    args: [...args],
    options: {
      'state-dir': { type: 'string' },
      grace: { type: 'string' },
      name: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
}

/**
 * The person-readable report of a reap.
 *
 * @example
 * ```ts
 * process.stdout.write(summary('/tmp/tether-state-0', []));
 * ```
 */
export function summary(stateDir: string, reaped: readonly RecoveredRuntime[]): string {
  if (reaped.length === 0) return `tether reap: nothing to reap (no dead runtime in ${stateDir})\n`;
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : word.endsWith('s') ? 'es' : 's'}`;
  const lines = [`tether reap: ${plural(reaped.length, 'dead runtime')} in ${stateDir}`];
  for (const r of reaped) {
    const parts = [
      `${plural(r.killed, 'process')} killed`,
      `${plural(r.spillFiles, 'spill file')} removed`,
      ...(r.cgroup !== null ? [`cgroup ${r.cgroup} removed`] : []),
      ...containersOf(r, plural),
      ...podsOf(r, plural),
    ];
    const fate =
      r.escaped.length === 0
        ? `verified dead (proof ${r.proof})`
        : `NOT VERIFIED DEAD: ${r.escaped.join(', ')} still alive (could not be killed, or could not be proven not its own)`;
    lines.push(`  runtime ${r.runtimeId} (pid ${r.pid}, ${r.containment}): ${parts.join(', ')}; ${fate}`);
  }
  return `${lines.join('\n')}\n`;
}

// X6: the containers removed, and any the engine refused to remove (named with its error).
function containersOf(r: RecoveredRuntime, plural: (n: number, word: string) => string): string[] {
  if (r.containers.length === 0) return [];
  const failed = r.containers.filter((c) => c.error !== null);
  const removed = `${plural(r.containers.length - failed.length, 'container')} removed`;
  return [removed, ...failed.map((c) => `CONTAINER ${c.name} NOT REMOVED (${c.engine}: ${c.error})`)];
}

// X6: the pods deleted, and any the API refused to delete (named with its error).
function podsOf(r: RecoveredRuntime, plural: (n: number, word: string) => string): string[] {
  if (r.pods.length === 0) return [];
  const failed = r.pods.filter((p) => p.error !== null);
  const deleted = `${plural(r.pods.length - failed.length, 'pod')} deleted`;
  return [deleted, ...failed.map((p) => `POD ${p.namespace}/${p.name} NOT DELETED (${p.error})`)];
}
