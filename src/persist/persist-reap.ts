import { existsSync, readdirSync } from 'node:fs';
import type { TreeKillVerdict } from '../subprocess/types.js';
import { helperGone, openPersistHelper } from './persist-helper.js';
import { persistDir, resolvePersist } from './persist-options.js';

/** What `tether reap --name` did (K6). */
export interface PersistReap {
  readonly name: string;
  readonly dir: string;
  /** False when no helper of that name was running (nothing to do). */
  readonly found: boolean;
  /** One verdict per tree the helper held, each with its tree id. */
  readonly verdicts: readonly (TreeKillVerdict & { readonly tree: string })[];
  /** Whether the helper and its directory are gone. */
  readonly ended: boolean;
}

/**
 * Ends persisted runtime `name`'s helper and everything under it (K6, `tether reap --name`):
 * every tree it holds is killed to a verdict, adopted or not, then the helper ends and removes
 * its directory. A name with no helper running reaps nothing (and starts none).
 *
 * @example
 * ```ts
 * const { verdicts } = await reapPersisted('/tmp/tether-state-0', 'ci', 2000);
 * ```
 */
export async function reapPersisted(stateDir: string, name: string, graceMs: number): Promise<PersistReap> {
  resolvePersist({ name });
  const dir = persistDir(stateDir, name);
  const running = existsSync(dir) && readdirSync(dir).some((f) => /^helper-\d+\.sock$/.test(f));
  if (!running) return { name, dir, found: false, verdicts: [], ended: !existsSync(dir) };
  const helper = await openPersistHelper({
    stateDir,
    name,
    lingerMs: 1,
    keepBytes: { job: 0, terminal: 0 },
    exclusive: false,
  });
  let verdicts: PersistReap['verdicts'] = [];
  try {
    const reply = await helper.provider.request({ op: 'end', graceMs });
    verdicts = reply.verdicts as PersistReap['verdicts'];
  } finally {
    await helper.provider.dispose();
  }
  return { name, dir, found: true, verdicts, ended: await helperGone(helper, 5_000) };
}
