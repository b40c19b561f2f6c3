/** What inspection events tell of an actor (XState's `ActorRefLike` plus its internals). */
export interface InspectedRef {
  readonly id?: string;
  readonly systemId?: string;
  /**
   * The options it was created with: `systemId` is known here before `systemId` is set, and
   * the input of a job's actor names its job, of an owner's actor its owner.
   */
  readonly options?: {
    readonly systemId?: string;
    readonly input?: { readonly jobId?: unknown; readonly ownerKey?: unknown };
  };
  readonly _parent?: InspectedRef;
  getSnapshot(): unknown;
}

const cache = new WeakMap<object, string>();

/**
 * V1: the stable id of an actor of the runtime's systems, derived from what it is rather than
 * from XState's per-process session ids (`x:3`): `job:<jobId>`, `terminal:<terminalId>`,
 * `agent:<sessionId>`, `router:<sessionId>`, the registries' system ids (`tether.jobs`,
 * `tether.agents`), and `<parent id>/<child id>` for an invoked helper (`job:job_x/producer`).
 *
 * @example
 * ```ts
 * stableActorId(event.actorRef); // 'job:job_Xb3k9QpL2vTz'
 * ```
 */
export function stableActorId(ref: InspectedRef): string {
  const known = cache.get(ref);
  if (known !== undefined) return known;
  const id = deriveId(ref);
  cache.set(ref, id);
  return id;
}

// From what the registries give their children, known at creation (a child's id is only its
// slot's, machines/child-slots.ts): the input of a job's or an owner's actor names its job or
// owner; an agent's system id is its publication `agent:<sessionId>:<n>`, a router's
// `router:<sessionId>:<n>`.
function deriveId(ref: InspectedRef): string {
  const machine = machineIdOf(ref);
  const id = String(ref.id);
  // XState announces an actor (`@xstate.actor`) before it sets `systemId` from its options.
  const systemId = ref.systemId ?? ref.options?.systemId;
  if (machine === 'job') return `job:${String(ref.options?.input?.jobId ?? id)}`;
  if (machine === 'agent') return `agent:${sessionOf((systemId ?? id).replace(/^agent:/, ''))}`;
  if (machine === 'router') return `router:${sessionOf((systemId ?? id).replace(/^router:/, ''))}`;
  if (systemId !== undefined) return systemId;
  const parent = ref._parent;
  const name = machine === 'jobOwner' ? `owner:${String(ref.options?.input?.ownerKey)}` : id;
  return parent === undefined ? name : `${stableActorId(parent)}/${name}`;
}

// `<sessionId>:<n>` (or a reload's router `<sessionId>:<n>.<generation>`) → `<sessionId>`.
function sessionOf(publication: string): string {
  return publication.replace(/:\d+(?:\.\d+)?$/, '');
}

/**
 * The `id` of the machine an actor runs (`job`, `terminal`, `agent`, `router`, `jobs`,
 * `agents`), or undefined for promise and callback actors.
 *
 * @example
 * ```ts
 * machineIdOf(jobActor); // 'job'
 * ```
 */
export function machineIdOf(ref: InspectedRef): string | undefined {
  const logic = (ref as { logic?: { id?: unknown; config?: unknown } }).logic;
  return logic?.config !== undefined && typeof logic.id === 'string' ? logic.id : undefined;
}
