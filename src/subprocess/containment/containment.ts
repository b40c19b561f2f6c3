import { join } from 'node:path';
import { TetherError } from '../../errors.js';
import { createCgroupContainment } from './cgroup-containment.js';
import { probeCgroup } from './cgroup-fs.js';
import type { Containment } from './containment-types.js';
import { createMarkerContainment } from './marker-containment.js';

/** What `createRuntime({ containment })` asks for: the best available (default), or one forced. */
export type ContainmentRequest = 'auto' | 'cgroup' | 'marker';

export interface ContainmentOptions {
  readonly request: ContainmentRequest;
  /** Names the runtime's cgroup so a successor can tell whose it is (K3). */
  readonly runtimeId: string;
  /** Where the bash entry file lives. */
  readonly stateDir: string;
}

/**
 * Picks the strongest boundary this host offers (K1): a cgroup of the runtime's own below the
 * cgroup this process is in when that is writable cgroup v2, else the env marker.
 * `request: 'cgroup'` throws CONTAINMENT_UNAVAILABLE naming what is missing where.
 *
 * @example
 * ```ts
 * const containment = createContainment({ request: 'auto', runtimeId: 'r1', stateDir });
 * console.log(containment.mode); // 'cgroup' as root on Linux 5.14+
 * ```
 */
export function createContainment(opts: ContainmentOptions): Containment {
  if (opts.request === 'marker') return createMarkerContainment();
  const probe = probeCgroup();
  if (!probe.ok) {
    if (opts.request === 'cgroup') {
      throw new TetherError(
        'CONTAINMENT_UNAVAILABLE',
        `containment: 'cgroup' is not available here: ${probe.reason}. Use containment: 'marker' (or leave it unset for the best available)`,
      );
    }
    return createMarkerContainment();
  }
  try {
    return createCgroupContainment({
      mount: probe.mount,
      dir: join(probe.self, `tether-${opts.runtimeId}`),
      stateDir: opts.stateDir,
    });
  } catch (err) {
    // Only a cgroup that cannot be had falls back; a state dir that cannot be written fails.
    if (opts.request === 'cgroup' || !(err instanceof TetherError && err.code === 'CONTAINMENT_UNAVAILABLE'))
      throw err;
    return createMarkerContainment();
  }
}
