import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { TetherError } from '../../src/errors.js';
import { createOwnerRegistry } from '../../src/owners/owner-registry.js';
import * as tokenModule from '../../src/owners/owner-token.js';

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    return err instanceof TetherError ? err.code : `not a TetherError: ${String(err)}`;
  }
  return undefined;
};

describe('owner tokens', () => {
  it('O1: a token reveals nothing through JSON, inspect, string conversion or keys', () => {
    const { token } = createOwnerRegistry().agent();
    expect(JSON.stringify(token)).toBeUndefined();
    expect(JSON.stringify({ owner: token, n: 1 })).toBe('{"n":1}');
    expect(inspect(token, { showHidden: true, depth: 5 })).toBe('AgentOwnerToken <opaque>');
    expect(inspect({ owner: token })).toBe('{ owner: AgentOwnerToken <opaque> }');
    expect(String(token)).toBe('[object AgentOwnerToken]');
    expect(Object.keys(token)).toEqual([]);
    expect(Reflect.ownKeys(token)).toEqual([]);
    expect(Object.isFrozen(token)).toBe(true);
  });

  it('O1: a structured clone is an empty object that is not a token (fails closed)', () => {
    const owners = createOwnerRegistry();
    const { token } = owners.agent();
    const clone = structuredClone(token) as unknown;
    expect(clone).toEqual({});
    expect(codeOf(() => owners.assertLive(clone))).toBe('OWNER_INVALID');
  });

  it('O1: tokens have reference identity; a replacement agent gets a new token', () => {
    const owners = createOwnerRegistry();
    const first = owners.agent();
    const replacement = owners.agent();
    expect(first.token).not.toBe(replacement.token);
    expect(owners.keyOf(first.token)).not.toBe(owners.keyOf(replacement.token));
    first.retire();
    expect(owners.assertLive(replacement.token)).toBe(replacement.token);
  });

  it('O1: there is no public constructor', () => {
    // The module exports functions only; the class behind a token is not reachable by name.
    const exported = Object.entries(tokenModule).filter(([, v]) => typeof v === 'function');
    expect(exported.map(([name]) => name).sort()).toEqual([
      'mintOwnerToken',
      'ownerTokenState',
      'retireOwnerToken',
    ]);
    const owners = createOwnerRegistry();
    const { token } = owners.host();
    const Ctor = (token as object).constructor as new () => object;
    const forged = new Ctor();
    expect(codeOf(() => owners.assertLive(forged))).toBe('OWNER_INVALID');
    expect(codeOf(() => owners.assertLive(Object.create(Object.getPrototypeOf(token))))).toBe(
      'OWNER_INVALID',
    );
  });

  it('O2: a host lease is an explicit owner that its holder retires', () => {
    const owners = createOwnerRegistry();
    const lease = owners.host();
    expect(lease.retired).toBe(false);
    expect(owners.assertLive(lease.token)).toBe(lease.token);
    lease.retire();
    lease.retire();
    expect(lease.retired).toBe(true);
    expect(owners.isRetired(lease.token)).toBe(true);
    expect(owners.assertKnown(lease.token)).toBe(lease.token);
  });

  it('O3: a missing, wrong-type, foreign or retired owner fails closed', () => {
    const owners = createOwnerRegistry();
    const other = createOwnerRegistry().host();
    for (const bad of [undefined, null, 'host', 42, {}, [], () => {}, other.token]) {
      expect(codeOf(() => owners.assertLive(bad))).toBe('OWNER_INVALID');
    }
    const lease = owners.host();
    lease.retire();
    expect(codeOf(() => owners.assertLive(lease.token))).toBe('OWNER_RETIRED');
  });

  it('O3: an invalid owner error names the kind of value, never the value itself', () => {
    const owners = createOwnerRegistry();
    try {
      owners.assertLive('sk-secret-value');
      expect.unreachable();
    } catch (err) {
      expect((err as Error).message).toContain('a string');
      expect((err as Error).message).not.toContain('sk-secret-value');
    }
  });
});
