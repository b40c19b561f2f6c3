import { TetherError } from '../errors.js';
import type { SubprocessSpawnSpec, TerminalSpawnSpec } from '../subprocess/types.js';
import type { ExecTransportOptions } from './exec-provider.js';
import type { RemoteProvider } from './helper-provider.js';

/**
 * The provider of one owner placed in a container or pod of its own (X6): made and ended with
 * the owner.
 *
 * @example
 * ```ts
 * const placed: PlacedOwner = placeInPod({ engine: 'kubernetes', namespace: 'agents', image: 'agent:1' }, origin);
 * await placed.dispose(); // after the owner's trees are dead: the pod is deleted
 * ```
 */
export interface PlacedOwner extends RemoteProvider {
  /** Ends the helper link, then removes the container or pod. Idempotent. */
  dispose(): Promise<void>;
}

/** What {@link placedOwner} is made of: a start under way, the provider into it, its removal. */
export interface PlacedOwnerParts {
  /** The provider's name (`container`, `pod`) and where it runs (`podman:c1`, `kubernetes:ns/pod`). */
  readonly name: string;
  readonly label: string;
  /** The start, begun already; rejects PROVIDER_UNAVAILABLE with the engine's or the API's words. */
  readonly started: Promise<void>;
  /** The provider that runs trees in it once started (the exec provider, X5). */
  readonly inner: RemoteProvider;
  /** Removes it: after the helper link ended and the start settled, also after a failed start. */
  readonly remove: () => Promise<void>;
  /** Called first at dispose: a start still under way stops waiting (the removal follows). */
  readonly cancelStart?: () => void;
}

/**
 * The one shape of every placement (X6): spawns wait for the start (its failure is every
 * spawn's PROVIDER_UNAVAILABLE: nothing of the owner runs anywhere else), then run on the inner
 * provider; `dispose` ends the inner provider, then removes what was started. `owners.host` is
 * synchronous, so the start runs in the background and its failure surfaces at the first spawn.
 *
 * @example
 * ```ts
 * const placed = placedOwner({ name: 'container', label: 'podman:c1', started, inner, remove: () => rm('c1') });
 * ```
 */
export function placedOwner(parts: PlacedOwnerParts): PlacedOwner {
  const { inner, started } = parts;
  started.catch(() => {}); // surfaced by the owner's first spawn
  let disposing: Promise<void> | null = null;
  const ready = async (signal: AbortSignal | undefined) => {
    await untilAborted(started, signal);
    return inner;
  };
  return {
    name: parts.name,
    label: parts.label,
    get workers() {
      return inner.workers;
    },
    get provesInput() {
      return inner.provesInput;
    },
    spawn: async (spec: SubprocessSpawnSpec) => (await ready(spec.signal)).spawn(spec),
    spawnTerminal: async (spec: TerminalSpawnSpec) => (await ready(spec.signal)).spawnTerminal(spec),
    dispose() {
      disposing ??= (async () => {
        parts.cancelStart?.();
        await inner.dispose();
        await started.catch(() => {});
        await parts.remove();
      })();
      return disposing;
    },
  };
}

/**
 * The checks every placement's options share; each failure is INVALID_ARGUMENT naming the field
 * (`owners.host options.placement: startTimeoutMs must be a positive number, got -1`).
 *
 * @example
 * ```ts
 * const check = placementChecks(value, 'placement');
 * check.strings(['user', 'command']);
 * ```
 */
export function placementChecks(value: unknown, what: string) {
  const fail = (message: string): never => {
    throw new TetherError('INVALID_ARGUMENT', `${what}: ${message}`);
  };
  if (typeof value !== 'object' || value === null) fail('must be an object: { engine, … }');
  const p = value as Record<string, unknown>;
  return {
    p,
    fail,
    /** Each key, when given, is a non-empty string. */
    strings(keys: readonly string[]) {
      for (const key of keys) {
        if (p[key] !== undefined && (typeof p[key] !== 'string' || p[key] === ''))
          fail(`${key} must be a non-empty string`);
      }
    },
    /** Each key, when given, is an array of strings. */
    words(keys: readonly string[]) {
      for (const key of keys) {
        const words = p[key];
        if (words !== undefined && !(Array.isArray(words) && words.every((w) => typeof w === 'string')))
          fail(`${key} must be an array of strings`);
      }
    },
    /** `startTimeoutMs` is a positive number and `exec` an object, when given. */
    common() {
      const ms = p.startTimeoutMs;
      if (ms !== undefined && !(typeof ms === 'number' && Number.isFinite(ms) && ms > 0))
        fail(`startTimeoutMs must be a positive number, got ${String(ms)}`);
      if (p.exec !== undefined && (typeof p.exec !== 'object' || p.exec === null))
        fail('exec must be an object');
      return p.exec as ExecTransportOptions | undefined;
    },
  };
}

// The start, unless the spawn is aborted first (then ABORTED: the start goes on, for the
// owner's next spawn or its removal).
async function untilAborted(start: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return start;
  if (signal.aborted) throw new TetherError('ABORTED', 'the spawn was aborted before it started');
  let stop!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    stop = () => reject(new TetherError('ABORTED', 'the spawn was aborted while its placement was starting'));
    signal.addEventListener('abort', stop, { once: true });
  });
  try {
    await Promise.race([start, aborted]);
  } finally {
    signal.removeEventListener('abort', stop);
  }
}
