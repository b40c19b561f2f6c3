import type { InspectionEvent } from 'xstate';
import { type InspectedRef, machineIdOf, stableActorId } from './actor-ids.js';
import type { FactBody, FactSink } from './fact-types.js';

interface Seen {
  state: string;
  delivered: number;
  batch: { jobs: string[]; terminals: string[] };
}

type Snapshot = {
  readonly value?: unknown;
  readonly status?: string;
  readonly context?: Record<string, unknown>;
};

/**
 * V1: turns the inspection events of the runtime's actor systems into facts — job
 * started/state/ended, terminal opened/state/closed, agent created/phase/retired, notices
 * delivered — and, for listeners that asked, the inspection events themselves under stable ids.
 * The machines' snapshots are the source of truth, so the services need no hook for these.
 *
 * @example
 * ```ts
 * const inspect = inspectionFacts(stream, (e) => stream.inspection(e));
 * createActor(logic, { inspect });
 * ```
 */
export function inspectionFacts(
  sink: FactSink,
  inspection: { readonly wanted: () => boolean; readonly emit: (fact: FactBody) => void },
): (event: InspectionEvent) => void {
  const seen = new Map<string, Seen>();
  return (event) => {
    if (inspection.wanted()) inspection.emit(inspectionFact(event));
    if (event.type !== '@xstate.snapshot') return;
    const machine = machineIdOf(event.actorRef as InspectedRef);
    if (machine === undefined) return;
    const snapshot = event.snapshot as Snapshot;
    const context = snapshot.context ?? {};
    const actor = stableActorId(event.actorRef as InspectedRef);
    const state = stateName(snapshot.value);
    const before = seen.get(actor);
    const current: Seen = before ?? { state: '', delivered: 0, batch: { jobs: [], terminals: [] } };
    if (before === undefined) seen.set(actor, current);
    const previous = before?.state;
    const changed = current.state !== state;
    current.state = state;
    const ended = snapshot.status === 'done' || snapshot.status === 'error' || snapshot.status === 'stopped';
    if (ended) seen.delete(actor);
    if (machine === 'job') {
      if (before === undefined)
        sink.emit({
          type: 'job.started',
          actor,
          owner: String(context.ownerKey),
          kind: String(context.kind),
          label: String(context.label),
          startedAt: Number(context.startedAt),
        });
      else if (changed && !ended) sink.emit({ type: 'job.state', actor, state });
      if (snapshot.status === 'done') {
        const endedAt = typeof context.endedAt === 'number' ? context.endedAt : Date.now();
        sink.emit({
          type: 'job.ended',
          actor,
          state: state as 'succeeded' | 'failed' | 'killed',
          exitCode: (context.exitCode as number | null) ?? null,
          signal: (context.signal as string | null) ?? null,
          error: (context.error as string | null) ?? null,
          durationMs: endedAt - Number(context.startedAt),
        });
      }
    } else if (machine === 'terminal') {
      if (!changed) return;
      if (state === 'idle' && previous === 'opening')
        sink.emit({ type: 'terminal.opened', actor, owner: String(context.ownerKey) });
      else if (state === 'closed')
        sink.emit({ type: 'terminal.closed', actor, reason: (context.endReason as string | null) ?? null });
      else if (before !== undefined) sink.emit({ type: 'terminal.state', actor, state });
    } else if (machine === 'agent') {
      const wakes = Number(context.wakes ?? 0);
      const maxWakes = Number(context.maxWakes ?? 0);
      if (before === undefined)
        sink.emit({
          type: 'agent.created',
          actor,
          sessionId: String(context.sessionId),
          wake: String(context.wake),
          maxWakes,
        });
      if (changed && state !== 'retired')
        sink.emit({
          type: 'agent.phase',
          actor,
          phase: state,
          wakes,
          maxWakes,
          turns: Number(context.turns ?? 0),
        });
      if (snapshot.status === 'done') sink.emit({ type: 'agent.retired', actor });
    } else if (machine === 'router') {
      const delivered = Number(context.delivered ?? 0);
      if (delivered > current.delivered) {
        sink.emit({
          type: 'notice.delivered',
          actor: actor.replace(/^router:/, 'agent:'),
          jobs: current.batch.jobs,
          terminals: current.batch.terminals,
        });
      }
      current.delivered = delivered;
      current.batch = batchOf(context.batch);
    }
  };
}

// A completion batch's job and terminal ids (`Completion` of machines/completion-router.ts).
function batchOf(batch: unknown): Seen['batch'] {
  const jobs: string[] = [];
  const terminals: string[] = [];
  for (const c of Array.isArray(batch) ? batch : []) {
    const item = c as { kind?: string; job?: { id?: string }; terminal?: { id?: string } };
    if (item.kind === 'job' && item.job?.id) jobs.push(`job:${item.job.id}`);
    if (item.kind === 'terminal' && item.terminal?.id) terminals.push(`terminal:${item.terminal.id}`);
  }
  return { jobs, terminals };
}

// `{ running: 'active' }` → `running.active`; a string stays itself.
function stateName(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || typeof value !== 'object') return String(value);
  return Object.entries(value as Record<string, unknown>)
    .map(([key, sub]) => `${key}.${stateName(sub)}`)
    .join(',');
}

// An inspection event as a JSON fact: who (stable ids), what (event type, state), never payloads.
function inspectionFact(event: InspectionEvent): FactBody {
  const actor = stableActorId(event.actorRef as InspectedRef);
  const machine = machineIdOf(event.actorRef as InspectedRef);
  const base = { type: 'inspect' as const, kind: event.type, actor, ...(machine ? { machine } : {}) };
  if (event.type === '@xstate.snapshot') {
    const snapshot = event.snapshot as Snapshot;
    return {
      ...base,
      event: event.event.type,
      ...(snapshot.value !== undefined ? { state: stateName(snapshot.value) } : {}),
      ...(snapshot.status ? { status: snapshot.status } : {}),
    };
  }
  if (event.type === '@xstate.event') {
    const source = event.sourceRef as InspectedRef | undefined;
    return { ...base, event: event.event.type, ...(source ? { source: stableActorId(source) } : {}) };
  }
  const parent = (event.actorRef as InspectedRef)._parent;
  return { ...base, ...(parent ? { parent: stableActorId(parent) } : {}) };
}
