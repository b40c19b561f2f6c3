import type { TreeKillVerdict } from '../subprocess/types.js';
import type { FactBody } from './fact-types.js';

/**
 * A tree kill's verdict (S4, K2) as a `kill.verdict` fact about `actor`.
 *
 * @example
 * ```ts
 * facts.emit(verdictFact(`terminal:${id}`, await pty.kill()));
 * ```
 */
export function verdictFact(actor: string, verdict: TreeKillVerdict): FactBody {
  const escaped = verdict.status === 'escaped' ? verdict : { escaped: [], stuck: [] };
  return {
    type: 'kill.verdict',
    actor,
    status: verdict.status,
    proof: String(verdict.proof),
    killed: verdict.killed,
    escaped: escaped.escaped,
    stuck: escaped.stuck,
  };
}
