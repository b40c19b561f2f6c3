import { TetherError } from '../errors.js';
import type { OwnerRegistry } from '../owners/owner-registry.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import { assertContainerPlacement, placeInContainer } from '../remote/container-placement.js';
import type { PlacedOwner } from '../remote/placed-owner.js';
import { assertPodPlacement, placeInPod } from '../remote/pod-placement.js';
import { assertProvider } from '../runtime-options.js';
import { type Confinement, resolveConfinement } from '../sandbox/sandbox-options.js';
import { createSandboxProvider, type SandboxProvider } from '../sandbox/sandbox-provider.js';
import { findSandboxTools, type SandboxTools } from '../sandbox/sandbox-tools.js';
import type { SandboxDescription } from '../sandbox/sandbox-types.js';
import type { ContainerOrigin } from '../subprocess/containment/container-labels.js';
import type { PodPlace } from '../subprocess/containment/kube-api.js';
import type { SubprocessProvider } from '../subprocess/types.js';
import type { PlacedProvider, PlacementOptions } from './placement-types.js';

/**
 * `rt.stats().sandbox`: the runtime's default confinement and the enclaves running now.
 *
 * @example
 * ```ts
 * const { mode, mechanism, enclaves } = rt.stats().sandbox; // 'workspace-write', 'bubblewrap', 2
 * ```
 */
export interface SandboxStats extends SandboxDescription {
  /** Owners (and the ownerless default) whose enclave runs now. */
  readonly enclaves: number;
}

/**
 * X4 placement: which provider starts an owner's processes. An owner placed with its own
 * provider, sandbox or isolation gets a provider of its own (made on first use, ended with
 * the owner); one placed in a container or pod (X6) gets it, started when it is placed
 * and removed when it ends; every other owner shares the runtime's.
 */
export interface Placement {
  /**
   * The provider for `owner` (`undefined`: an ownerless `rt.shell.run`). `escalate`: the
   * owner's provider without its sandbox (A4, approved by the policy step before this).
   */
  providerFor(owner: AgentOwnerToken | undefined, opts?: { readonly escalate?: boolean }): PlacedProvider;
  /** Places `owner` (validated first: INVALID_ARGUMENT naming the field). Call before it spawns. */
  assign(owner: AgentOwnerToken, options: PlacementOptions): void;
  /** Validates placement options without placing anyone (what `agents.create` checks first). */
  check(options: PlacementOptions, what: string): void;
  /** Ends the owner's enclave, container or pod once its processes are gone (`settled` drains them first). */
  drainOwner(owner: AgentOwnerToken): Promise<void>;
  stats(): SandboxStats;
  /** Ends every enclave and removes every container and pod. Idempotent. */
  dispose(): Promise<void>;
}

export interface PlacementDeps {
  readonly owners: OwnerRegistry;
  /** The runtime's current provider (a reload swaps it, S5). */
  readonly base: () => SubprocessProvider;
  /** The runtime's own placement: `createRuntime({ sandbox, isolation })`. */
  readonly defaults: PlacementOptions;
  /** The working directory: the default writable root. */
  readonly cwd: string;
  readonly cleanupGraceMs: number;
  /** Takes ownership of a provider an owner was placed on (the runtime disposes it, S2). */
  readonly adopt: (provider: SubprocessProvider) => void;
  /** Resolves once the owner's terminals and jobs are drained (D1 order: before its enclave ends). */
  readonly settled: (owner: AgentOwnerToken) => Promise<void>;
  /** X6: the runtime's process, labelled on every container and pod it starts (recovery finds them by it). */
  readonly origin: Omit<ContainerOrigin, 'owner'>;
  /** X6: records where a pod is about to be created (the state dir: recovery looks only there). */
  readonly recordPodPlace: (place: PodPlace) => void;
}

interface Placed {
  readonly provider: SubprocessProvider | undefined;
  readonly confinement: Confinement | null;
  confined: SandboxProvider | null;
  /** X6: the owner's container or pod (its provider is `provider`). */
  readonly box: PlacedOwner | null;
}

const RUNTIME = Symbol('runtime');

/**
 * Creates the runtime's placement. The runtime's default confinement is resolved (and its
 * tools found) here, so a sandbox this machine cannot give fails at `createRuntime`.
 *
 * @example
 * ```ts
 * const placement = createPlacement({ owners, base: () => current, defaults: { sandbox }, cwd, cleanupGraceMs: 2000,
 *   adopt: (p) => providers.add(p), settled: async (o) => { await terminals.drainOwner(o); await jobs.drainOwner(o); } });
 * const provider = placement.providerFor(agent.owner);
 * ```
 */
export function createPlacement(deps: PlacementDeps): Placement {
  const resolve = (options: PlacementOptions, what: string): Confinement | null =>
    resolveConfinement(options.sandbox, options.isolation, deps.cwd, what);
  const runtimeConfinement = resolve(deps.defaults, 'sandbox');
  let tools: SandboxTools | null = runtimeConfinement ? findSandboxTools() : null;
  const placed = new Map<string | typeof RUNTIME, Placed>();
  let disposing: Promise<void> | null = null;

  const toolsNow = (): SandboxTools => {
    tools ??= findSandboxTools();
    return tools;
  };
  const keyOf = (owner: AgentOwnerToken | undefined) =>
    owner === undefined ? RUNTIME : deps.owners.keyOf(deps.owners.assertLive(owner));
  const entryFor = (key: string | typeof RUNTIME): Placed => {
    let entry = placed.get(key);
    if (entry === undefined) {
      entry = { provider: undefined, confinement: runtimeConfinement, confined: null, box: null };
      placed.set(key, entry);
    }
    return entry;
  };

  // X6: a container or pod is the owner's boundary; a sandbox or isolation (its own or the runtime's)
  // confines local processes, and is never dropped silently: it must be turned off for it.
  const checkContainer = (options: PlacementOptions, what: string) => {
    const engine = (options.placement as { engine?: unknown } | null)?.engine;
    if (engine === 'kubernetes') assertPodPlacement(options.placement, `${what}.placement`);
    else if (engine === 'podman' || engine === 'docker')
      assertContainerPlacement(options.placement, `${what}.placement`);
    else
      throw new TetherError(
        'INVALID_ARGUMENT',
        `${what}.placement: engine must be 'podman', 'docker' or 'kubernetes', got ${String(engine)}`,
      );
    if (options.provider !== undefined)
      throw new TetherError('INVALID_ARGUMENT', `${what}: pass provider or placement, not both`);
    const sandbox = options.sandbox ?? deps.defaults.sandbox;
    const isolation = options.isolation ?? deps.defaults.isolation;
    if (resolveConfinement(sandbox, isolation, deps.cwd, `${what}.sandbox`) !== null) {
      throw new TetherError(
        'INVALID_ARGUMENT',
        `${what}: a container or pod placement runs the owner's processes in it, which a sandbox or PID isolation cannot confine (sandbox ${sandbox?.mode ?? 'off'}, isolation ${isolation ?? 'none'}); pass sandbox: { mode: 'off' } and isolation: 'none' with it, and confine the container with its own run flags or the pod with its spec`,
      );
    }
  };

  return {
    providerFor(owner, opts = {}) {
      const entry = placed.get(keyOf(owner)) ?? (runtimeConfinement ? entryFor(keyOf(owner)) : undefined);
      const base = entry?.provider ?? deps.base();
      if (entry?.confinement == null || opts.escalate) return base;
      entry.confined ??= createSandboxProvider(() => entry.provider ?? deps.base(), {
        confinement: entry.confinement,
        cleanupGraceMs: deps.cleanupGraceMs,
        tools: toolsNow(),
      });
      return entry.confined;
    },
    check(options, what) {
      if (options.provider !== undefined) assertProvider(options.provider, `${what}.provider`);
      if (options.placement !== undefined) return checkContainer(options, what);
      if (resolve(options, `${what}.sandbox`) !== null) toolsNow();
    },
    assign(owner, options) {
      this.check(options, 'placement');
      const key = keyOf(owner);
      if (options.placement !== undefined) {
        const origin = { ...deps.origin, owner: deps.owners.keyOf(owner) };
        const box =
          options.placement.engine === 'kubernetes'
            ? placeInPod(options.placement, origin, deps.recordPodPlace)
            : placeInContainer(options.placement, origin);
        deps.adopt(box);
        placed.set(key, { provider: box, confinement: null, confined: null, box });
        return;
      }
      const sandbox = options.sandbox ?? deps.defaults.sandbox;
      const isolation = options.isolation ?? deps.defaults.isolation;
      if (options.provider !== undefined) deps.adopt(options.provider);
      placed.set(key, {
        provider: options.provider,
        confinement: resolveConfinement(sandbox, isolation, deps.cwd),
        confined: null,
        box: null,
      });
    },
    async drainOwner(owner) {
      const key = deps.owners.keyOf(deps.owners.assertKnown(owner));
      const entry = placed.get(key);
      if (entry === undefined) return;
      await deps.settled(owner);
      placed.delete(key);
      await entry.confined?.dispose();
      await entry.box?.dispose(); // X6: after its trees were verified dead
    },
    stats() {
      const d = runtimeConfinement?.description;
      let enclaves = 0;
      for (const entry of placed.values()) enclaves += entry.confined?.enclaves ?? 0;
      return {
        mode: d?.mode ?? 'off',
        mechanism: d ? 'bubblewrap' : 'none',
        network: d?.network ?? 'host',
        isolation: d ? 'pid' : 'none',
        writableRoots: d?.writableRoots ?? [],
        denyRead: d?.denyRead ?? [],
        uid: d?.uid ?? process.getuid?.() ?? 0,
        enclaves,
      };
    },
    dispose() {
      disposing ??= (async () => {
        const all = [...placed.values()];
        placed.clear();
        await Promise.allSettled(
          all.map(async (entry) => {
            await entry.confined?.dispose();
            await entry.box?.dispose();
          }),
        );
      })();
      return disposing;
    },
  };
}
