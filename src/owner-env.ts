import { TetherError } from './errors.js';
import type { JobSpec } from './jobs/job-types.js';
import type { OwnerRegistry } from './owners/owner-registry.js';
import type { AgentOwnerToken } from './owners/owner-token.js';
import { shellJobSpec } from './shell/shell-job.js';
import type { ShellDeps } from './shell/shell-service.js';
import type { ShellRequest } from './shell/shell-types.js';
import { identityEnv } from './subprocess/env.js';

/** The identity overlay of one owner's command (S3); `jobId` for a background job. */
export type OwnerEnv = (owner: AgentOwnerToken, jobId?: string) => Record<string, string>;

/**
 * S3's last sentence, wired at the composition root (the shell layer knows nothing of sessions
 * or job ids, SPEC section 0): the current identity snapshot of the owner — session id and agent
 * publication id for an agent, nothing for a host lease — plus the job id of a background job.
 *
 * @example
 * ```ts
 * const envOf = ownerEnv(owners, 'TETHER_');
 * envOf(agent.owner, 'job_x'); // { TETHER_SESSION_ID: 's1', TETHER_AGENT_ID: 'agent:s1:1', TETHER_JOB_ID: 'job_x' }
 * ```
 */
export function ownerEnv(owners: OwnerRegistry, prefix: string | undefined): OwnerEnv {
  return (owner, jobId) => identityEnv({ ...owners.identityOf(owner), jobId }, prefix);
}

/**
 * The owner a `rt.shell.run` call is for: the `owner` argument, or the request's `owner` field
 * (the same thing said inside the request). Two different owners are a caller's mistake.
 *
 * @example
 * ```ts
 * requestOwner({ command: 'ls', owner: agent.owner }, undefined); // agent.owner
 * ```
 */
export function requestOwner(
  req: ShellRequest,
  owner: AgentOwnerToken | undefined,
): AgentOwnerToken | undefined {
  const inRequest = typeof req === 'object' && req !== null ? req.owner : undefined;
  if (owner !== undefined && inRequest !== undefined && inRequest !== owner) {
    throw new TetherError(
      'INVALID_ARGUMENT',
      'shell.run got two different owners (its owner argument and req.owner); pass only one',
    );
  }
  return owner ?? inRequest;
}

/**
 * `req` with its `owner` set, so the policy step (A1) judges it for that owner. A request that
 * is not an object is passed on for validation to reject.
 *
 * @example
 * ```ts
 * runShell(deps, withOwner(req, agent.owner));
 * ```
 */
export function withOwner(req: ShellRequest, owner: AgentOwnerToken): ShellRequest {
  if (typeof req !== 'object' || req === null || req.owner === owner) return req;
  return { ...req, owner };
}

/**
 * `req` with `identity` applied last on its env overlay (identity wins over the caller's own
 * values of those names). A request that is not an object is passed on for validation to reject.
 *
 * @example
 * ```ts
 * runShell(deps, withIdentity(req, envOf(owner)));
 * ```
 */
export function withIdentity(req: ShellRequest, identity: Readonly<Record<string, string>>): ShellRequest {
  if (typeof req !== 'object' || req === null || Object.keys(identity).length === 0) return req;
  return { ...req, env: { ...req.env, ...identity } };
}

/**
 * The shell producer for `owner`, its env carrying the owner's identity and the job's own id:
 * the registry assigns the id before `run()` (J1), so it is in the env when the process
 * spawns. Everything else is resolved up front, as C3 asks.
 *
 * @example
 * ```ts
 * await jobs.start(owner, identifiedJobSpec(deps, owner, req, (jobId) => envOf(owner, jobId)));
 * ```
 */
export function identifiedJobSpec(
  deps: ShellDeps,
  owner: AgentOwnerToken,
  req: ShellRequest,
  envFor: (jobId: string) => Record<string, string>,
): JobSpec {
  const spec = shellJobSpec(deps, owner, req); // validates now, before any capacity is reserved
  return { ...spec, run: (ctx) => shellJobSpec(deps, owner, withIdentity(req, envFor(ctx.jobId))).run(ctx) };
}
