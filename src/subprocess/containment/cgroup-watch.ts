import { type FSWatcher, watch } from 'node:fs';
import { join } from 'node:path';
import { isPopulated } from './cgroup-fs.js';

/** The safety net under inotify: a slow re-read, in case a notification is ever missed. */
const SAFETY_POLL_MS = 250;

/**
 * Resolves `true` as soon as `dir` holds no live process (`cgroup.events` says `populated 0`),
 * `false` when `ms` passed first. Watches `cgroup.events` with inotify (`fs.watch`: the kernel
 * notifies on every populated change, measured) rather than polling; a slow re-read is only
 * the safety net. Every watcher and timer ends when it resolves.
 *
 * @example
 * ```ts
 * killCgroup(tree);
 * if (!(await waitUnpopulated(tree, 2000))) console.warn('still alive', cgroupPids(tree));
 * ```
 */
export function waitUnpopulated(dir: string, ms: number): Promise<boolean> {
  if (!isPopulated(dir)) return Promise.resolve(true);
  return new Promise((resolve) => {
    let watcher: FSWatcher | null = null;
    const done = (empty: boolean) => {
      watcher?.close();
      clearInterval(poll);
      clearTimeout(deadline);
      resolve(empty);
    };
    const check = () => {
      if (!isPopulated(dir)) done(true);
    };
    try {
      watcher = watch(join(dir, 'cgroup.events'), { persistent: false }, check);
      watcher.on('error', () => {}); // the cgroup was removed: the polls decide
    } catch {}
    const poll = setInterval(check, SAFETY_POLL_MS);
    const deadline = setTimeout(() => done(!isPopulated(dir)), Math.max(0, ms));
    check(); // it may have emptied between the first read and the watch
  });
}
