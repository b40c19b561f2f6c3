import type { RecoveredRuntime } from '../subprocess/containment/reaper.js';
import type { FactBody } from './fact-types.js';

/**
 * K3 in the fact stream: what a starting runtime reaped of the runtimes that died before it.
 *
 * @example
 * ```ts
 * if (rt.recovered.length > 0) facts.emit(recoveryFact(rt.recovered));
 * ```
 */
export function recoveryFact(recovered: readonly RecoveredRuntime[]): FactBody {
  return {
    type: 'recovery.reaped',
    runtimes: recovered.map(({ runtimeId, pid, killed, escaped, spillFiles, proof }) => ({
      runtimeId,
      pid,
      killed,
      escaped,
      spillFiles,
      proof,
    })),
  };
}
