import type { ContainerPlacement } from '../remote/container-placement.js';
import type { PodPlacement } from '../remote/pod-placement.js';
import type { IsolationMode, SandboxDescription, SandboxOptions } from '../sandbox/sandbox-types.js';
import type { SubprocessProvider } from '../subprocess/types.js';

/**
 * Where and how an owner's processes run (X4, X6, A3, K5): its own provider, or a container or
 * pod of its own, its sandbox, its isolation. Each field overrides the runtime's.
 *
 * @example
 * ```ts
 * const lease = rt.owners.host({ isolation: 'pid' });
 * const remote = rt.agents.create({ sessionId: 'r', onTurn, provider: createSshProvider(opts) });
 * const boxed = rt.owners.host({ placement: { engine: 'podman', image: 'localhost/agent:1' } });
 * const podded = rt.owners.host({ placement: { engine: 'kubernetes', namespace: 'agents', image: 'agent:1' } });
 * ```
 */
export interface PlacementOptions {
  /** X4: the provider this owner's processes start on; default the runtime's. The runtime disposes it at `dispose()`. */
  readonly provider?: SubprocessProvider;
  /**
   * X6: a container (`engine: 'podman' | 'docker'`) or a Kubernetes pod (`engine: 'kubernetes'`)
   * started for this owner alone, its trees run in it, removed when the owner ends (after its
   * trees are dead) or at `dispose()`. Not with `provider`; the container or pod is the owner's
   * boundary, so a sandbox or PID isolation (the runtime's too) must be turned off for
   * it: `sandbox: { mode: 'off' }`, `isolation: 'none'`.
   */
  readonly placement?: ContainerPlacement | PodPlacement;
  readonly sandbox?: SandboxOptions;
  readonly isolation?: IsolationMode;
}

/**
 * The provider an owner's processes start on, with the sandbox that confines them when one
 * does (A3). The seam (`SubprocessProvider`, S2) knows nothing of sandboxes; placement does.
 *
 * @example
 * ```ts
 * const provider: PlacedProvider = placement.providerFor(owner);
 * if (provider.sandbox) console.log(`confined: ${provider.sandbox.mode}`);
 * ```
 */
export type PlacedProvider = SubprocessProvider & { readonly sandbox?: SandboxDescription };
