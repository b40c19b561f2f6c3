import { readdirSync, readFileSync } from 'node:fs';
import { readIdentity } from '../../src/subprocess/identity.js';
import type { ProcessIdentity } from '../../src/subprocess/types.js';

/**
 * The live (not zombie) build/tether-spawner child of `host`, or null: what a test kills to
 * prove a runtime outlives its spawner.
 */
export function spawnerOf(host: number): ProcessIdentity | null {
  for (const name of readdirSync('/proc')) {
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      if (
        /^Name:\s+tether-spawner$/m.test(status) &&
        new RegExp(`^PPid:\\s+${host}$`, 'm').test(status) &&
        /^State:\s+(\S)/m.exec(status)?.[1] !== 'Z'
      )
        return readIdentity(Number(name));
    } catch {}
  }
  return null;
}
