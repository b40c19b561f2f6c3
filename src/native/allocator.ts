import { createRequire } from 'node:module';
import { builtFile } from '../subprocess/built-file.js';

/**
 * What a disposed runtime hands back to the kernel of the C memory it used (D2). The threads a
 * runtime starts and ends (its PTY host, its spill workers, node-pty's) each allocate from a
 * glibc malloc arena of their own; what they free stays in those arenas, resident, after the
 * threads are gone. Measured (1,000 terminals and 3,000 jobs, disposed, three times in one
 * process): RSS 84.6–86.8 MiB after each dispose against 77.1 before the first, and 74.8–76.9
 * once `malloc_trim(0)` ran. Node exposes no such call and I found no npm package that does
 * (`npm view malloc-trim`: 404; the registry's search is not reachable here), so
 * `allocator-trim.c` is ours: one Node-API function, built at install (docs/internals.md).
 */
export interface AllocatorTrim {
  /** Gives every arena's free pages back; true when glibc released anything. */
  trim(): boolean;
}

const require = createRequire(import.meta.url);
let loaded: AllocatorTrim | null | undefined;

/**
 * The compiled trim (`build/allocator-trim.node`, made by the install script), or null when it
 * was not built (no compiler or Node-API headers, not Linux) or does not load.
 *
 * @example
 * ```ts
 * allocatorTrim()?.trim(); // once a runtime's threads have ended
 * ```
 */
export function allocatorTrim(): AllocatorTrim | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  const path = builtFile('allocator-trim.node');
  if (path === null) return loaded;
  try {
    loaded = require(path) as AllocatorTrim;
  } catch {} // built for another Node-API or libc: the memory simply stays with the process
  return loaded;
}
