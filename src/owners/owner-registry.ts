import { TetherError } from '../errors.js';
import { type AgentOwnerToken, mintOwnerToken, ownerTokenState, retireOwnerToken } from './owner-token.js';

/**
 * An explicitly issued owner (SPEC O2): the token plus the power to retire it. Whoever holds
 * the lease decides when the owner ends; after `retire()` every operation with the token
 * fails closed with `OWNER_RETIRED` (draining its jobs still works, see `drainOwner`).
 *
 * @example
 * ```ts
 * const lease = rt.owners.host();
 * await rt.jobs.start(lease.token, spec);
 * lease.retire();
 * await rt.jobs.drainOwner(lease.token);
 * ```
 */
export interface OwnerLease {
  readonly token: AgentOwnerToken;
  /** True once `retire()` was called. */
  readonly retired: boolean;
  /** Idempotent. New operations with the token fail with `OWNER_RETIRED`. */
  retire(): void;
}

/**
 * Who an agent owner is, for the environment of the commands it runs (S3): its session id and
 * its exact publication id (`agent:<sessionId>:<n>`). Never the token.
 */
export interface OwnerIdentity {
  readonly sessionId: string;
  readonly agentId: string;
}

/**
 * The one place owner tokens come from (O1–O3). The composition root makes one registry and
 * hands it to every service that checks owners; a token from another registry is invalid.
 *
 * @example
 * ```ts
 * const owners = createOwnerRegistry();
 * const host = owners.host();
 * owners.assertLive(host.token); // returns the token
 * owners.assertLive('me');       // throws TetherError OWNER_INVALID
 * ```
 */
export interface OwnerRegistry {
  /** A new owner for a non-agent caller (O2). Each call is a distinct owner. */
  host(): OwnerLease;
  /**
   * A new owner for one exact agent publication (O1); a replacement agent gets a new one.
   * `identity` is what its commands see in their env (S3).
   */
  agent(identity?: OwnerIdentity): OwnerLease;
  /** The identity an agent owner was issued with; `null` for a host lease (or a foreign value). */
  identityOf(owner: AgentOwnerToken): OwnerIdentity | null;
  /** The token if it is live and issued here; else `OWNER_INVALID` / `OWNER_RETIRED` (O3). */
  assertLive(owner: unknown): AgentOwnerToken;
  /** The token if it was issued here, retired or not (teardown paths); else `OWNER_INVALID`. */
  assertKnown(owner: unknown): AgentOwnerToken;
  /** Whether a token issued here was retired (`false` for anything else). */
  isRetired(owner: AgentOwnerToken): boolean;
  /**
   * A stable, process-local string naming the owner inside machine contexts and maps
   * (`o1`, `o2`, …). It is a label, not a capability: it cannot be turned back into a token.
   */
  keyOf(owner: AgentOwnerToken): string;
}

/**
 * Creates an owner registry.
 *
 * @example
 * ```ts
 * const owners = createOwnerRegistry();
 * const jobs = createJobService({ owners, provider });
 * ```
 */
export function createOwnerRegistry(): OwnerRegistry {
  const issuer = {};
  const keys = new WeakMap<AgentOwnerToken, string>();
  const identities = new WeakMap<AgentOwnerToken, OwnerIdentity>();
  let minted = 0;

  const lease = (identity?: OwnerIdentity): OwnerLease => {
    const token = mintOwnerToken(issuer);
    keys.set(token, `o${++minted}`);
    if (identity !== undefined) {
      identities.set(token, Object.freeze({ sessionId: identity.sessionId, agentId: identity.agentId }));
    }
    return {
      token,
      get retired() {
        return ownerTokenState(token, issuer)?.retired ?? true;
      },
      retire: () => retireOwnerToken(token),
    };
  };

  const assertKnown = (owner: unknown): AgentOwnerToken => {
    if (ownerTokenState(owner, issuer) === undefined) {
      throw new TetherError(
        'OWNER_INVALID',
        `owner is not a token issued by this runtime (got ${describe(owner)}); ` +
          'use the token of the calling agent or of a host lease (rt.owners.host())',
      );
    }
    return owner as AgentOwnerToken;
  };

  return {
    host: () => lease(),
    agent: (identity) => lease(identity),
    identityOf: (owner) => identities.get(owner) ?? null,
    assertKnown,
    assertLive(owner) {
      const token = assertKnown(owner);
      if (ownerTokenState(token, issuer)?.retired) {
        throw new TetherError('OWNER_RETIRED', 'owner was retired; its tools and resources are closed');
      }
      return token;
    },
    isRetired: (owner) => ownerTokenState(owner, issuer)?.retired === true,
    keyOf(owner) {
      const key = keys.get(assertKnown(owner));
      if (key === undefined) throw new TetherError('OWNER_INVALID', 'owner has no key in this registry');
      return key;
    },
  };
}

// Names the kind of a bad owner value without echoing it (it may be a secret string).
function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object that is not a live token' : `a ${typeof value}`;
}
