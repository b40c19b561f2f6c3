/**
 * The owner capability (SPEC O1). A token is an opaque, process-local object compared by
 * reference: it has no public constructor, no readable fields, and reveals nothing when
 * serialized, inspected or cloned. Its state (live or retired, which registry minted it)
 * lives in a module-private WeakMap, so only this module can say what a token is.
 */

declare const ownerTokenBrand: unique symbol;

/**
 * An opaque capability naming one exact owner (an agent publication or an explicit host
 * lease). Compare by reference; never persist or log it. Obtain one from an
 * {@link OwnerRegistry} (`rt.owners.host()`); there is no other way to make one.
 *
 * @example
 * ```ts
 * const lease = rt.owners.host();
 * const job = await rt.jobs.start(lease.token, spec);
 * JSON.stringify({ owner: lease.token }); // '{}'
 * ```
 */
export interface AgentOwnerToken {
  readonly [ownerTokenBrand]: 'AgentOwnerToken';
}

/** What only this module knows about a token. */
interface TokenState {
  /** The registry that minted it: a token is valid only where it was issued. */
  readonly issuer: object;
  retired: boolean;
}

const states = new WeakMap<object, TokenState>();
const inspectCustom = Symbol.for('nodejs.util.inspect.custom');

// The runtime shape of a token: no own enumerable fields (structuredClone gives `{}`,
// which is not a token), `toJSON` hides it, inspect prints a fixed placeholder.
class OpaqueOwnerToken {
  get [Symbol.toStringTag](): string {
    return 'AgentOwnerToken';
  }
  toJSON(): undefined {
    return undefined;
  }
  [inspectCustom](): string {
    return 'AgentOwnerToken <opaque>';
  }
}

/** Mints a live token bound to `issuer`. Internal to the owners module. */
export function mintOwnerToken(issuer: object): AgentOwnerToken {
  const token = Object.freeze(new OpaqueOwnerToken());
  states.set(token, { issuer, retired: false });
  return token as unknown as AgentOwnerToken;
}

/** The token's state, or `undefined` when `value` is not a token minted by `issuer`. */
export function ownerTokenState(value: unknown, issuer: object): Readonly<TokenState> | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const state = states.get(value);
  return state?.issuer === issuer ? state : undefined;
}

/** Marks the token retired (idempotent); every later use fails closed. */
export function retireOwnerToken(token: AgentOwnerToken): void {
  const state = states.get(token);
  if (state) state.retired = true;
}
