import type { IsolationMode, SandboxDescription, SandboxOptions } from '../sandbox/sandbox-types.js';
import type { SubprocessProvider } from '../subprocess/types.js';

/**
 * Where and how an owner's processes run (X4, A3, K5): its own provider, its sandbox, its
 * isolation. Each field overrides the runtime's.
 *
 * @example
 * ```ts
 * const lease = rt.owners.host({ isolation: 'pid' });
 * const remote = rt.agents.create({ sessionId: 'r', onTurn, provider: createSshProvider(opts) });
 * ```
 */
export interface PlacementOptions {
  /** X4: the provider this owner's processes start on; default the runtime's. The runtime disposes it at `dispose()`. */
  readonly provider?: SubprocessProvider;
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
