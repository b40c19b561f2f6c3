import type { SnapshotFrom } from 'xstate';
import type { agentMachine } from '../../machines/agent.js';
import { TetherError } from '../errors.js';
import type { AgentActor } from './agent-record.js';

/** Service-wide count of `idle()` calls still waiting (D3: part of `stats().waiters`). */
export interface IdleWaiters {
  idle: number;
}

type Verdict = 'idle' | 'retired' | 'waiting';

// What a snapshot means to an idle() waiter: `idle` resolves it, anything past `running` ends it.
function verdictOf(snapshot: SnapshotFrom<typeof agentMachine>): Verdict {
  if (snapshot.status === 'active' && snapshot.matches('idle')) return 'idle';
  if (snapshot.status === 'active' && snapshot.matches('running')) return 'waiting';
  return 'retired';
}

const retired = () =>
  new TetherError(
    'OWNER_RETIRED',
    'the agent was disposed before its turns finished; what no turn claimed is in the result of agent.dispose()',
  );

/**
 * Resolves once the agent's machine is `idle`: no turn running and none due (every turn that
 * user input or a wake started has ended). At once if it already is. Rejects with
 * `OWNER_RETIRED` when the agent is (being) disposed first, and with `ABORTED` when `signal`
 * aborts. The waiter is a subscription on the agent actor that ends with it, so it never
 * outlives the agent; `waiters` counts it meanwhile.
 *
 * @example
 * ```ts
 * agent.say('run the tests');
 * await waitForIdle(record.actor!, waiters); // the turn (and any it led to) has ended
 * ```
 */
export function waitForIdle(
  actor: AgentActor,
  waiters: IdleWaiters,
  signal?: AbortSignal | undefined,
): Promise<void> {
  const now = verdictOf(actor.getSnapshot());
  if (now === 'idle') return Promise.resolve();
  if (now === 'retired') return Promise.reject(retired());
  if (signal?.aborted) return Promise.reject(aborted(signal));
  return new Promise<void>((resolve, reject) => {
    waiters.idle++;
    let settled = false;
    const finish = (error?: Error): void => {
      if (settled) return;
      settled = true;
      waiters.idle--;
      subscription.unsubscribe();
      signal?.removeEventListener('abort', onAbort);
      if (error) reject(error);
      else resolve();
    };
    const onAbort = () => finish(aborted(signal!));
    const subscription = actor.subscribe({
      next: (snapshot) => {
        const verdict = verdictOf(snapshot);
        if (verdict !== 'waiting') finish(verdict === 'idle' ? undefined : retired());
      },
      error: () => finish(retired()),
      complete: () => finish(retired()),
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function aborted(signal: AbortSignal): TetherError {
  return new TetherError('ABORTED', 'idle(): the wait was aborted by its signal; the agent is unaffected', {
    cause: signal.reason,
  });
}
