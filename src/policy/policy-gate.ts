import { assertArgument, TetherError } from '../errors.js';
import type { OwnerRegistry } from '../owners/owner-registry.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import type { SandboxOptions } from '../sandbox/sandbox-types.js';
import { askApprover } from './policy-ask.js';
import { PolicyDeniedError } from './policy-denied.js';
import { assertRules, judgeLine, judgeTerminal, type LineVerdict } from './policy-rules.js';
import type {
  DecidedBy,
  Policy,
  PolicyCaller,
  PolicyCheck,
  PolicyDecision,
  PolicyRequest,
  PolicyStep,
} from './policy-types.js';
import { loadShellParser, type ParsedLine } from './shell-parse.js';

/**
 * What an owner runs under: its policy and sandbox (an agent's replace the runtime's).
 *
 * @example
 * ```ts
 * gate.bind(agent.owner, { policy: { default: 'deny' }, caller: { kind: 'agent', owner: 'o2', sessionId: 's1', agentId: agent.id } });
 * ```
 */
export interface OwnerBinding {
  readonly policy?: Policy | undefined;
  readonly sandbox?: SandboxOptions | undefined;
  readonly caller: PolicyCaller;
}

/**
 * The one decision point before any spawn (SPEC A1). The services call `decide` at their
 * entry; `bind` gives an agent's owner its own policy and sandbox; `dispose` ends every
 * pending ask (`RUNTIME_DISPOSED`); `asking` counts them (a waiter, D3).
 *
 * @example
 * ```ts
 * const gate = createPolicyGate({ owners, policy, sandbox });
 * await gate.decide({ action: 'shell.run', command: 'ls', cwd: '/repo' });
 * ```
 */
export interface PolicyGate {
  readonly decide: PolicyStep;
  bind(owner: AgentOwnerToken, binding: OwnerBinding): void;
  readonly asking: number;
  dispose(): void;
}

const DEFAULT_ASK_TIMEOUT_MS = 60_000;
const NO_SANDBOX: SandboxOptions = Object.freeze({ mode: 'off' });

/**
 * Creates the policy step of a runtime.
 *
 * @example
 * ```ts
 * const gate = createPolicyGate({ owners, policy: { default: 'deny', rules } });
 * ```
 */
export function createPolicyGate(options: {
  readonly owners: OwnerRegistry;
  readonly policy?: Policy | undefined;
  readonly sandbox?: SandboxOptions | undefined;
}): PolicyGate {
  const { owners } = options;
  if (options.policy !== undefined) assertPolicy(options.policy, 'policy');
  const bindings = new WeakMap<AgentOwnerToken, OwnerBinding>();
  const lifetime = new AbortController();
  let asking = 0;

  const callerOf = (owner: AgentOwnerToken | undefined): PolicyCaller => {
    if (owner === undefined) return { kind: 'runtime' };
    return bindings.get(owner)?.caller ?? { kind: 'host', owner: owners.keyOf(owner) };
  };

  const decide: PolicyStep = async (check) => {
    if (lifetime.signal.aborted)
      throw new TetherError('RUNTIME_DISPOSED', 'the runtime was disposed; create a new one');
    if (check.owner !== undefined) owners.assertLive(check.owner); // nobody is asked for a retired owner
    const binding = check.owner === undefined ? undefined : bindings.get(check.owner);
    const policy = binding?.policy ?? options.policy;
    if (policy === undefined && check.escalate === undefined) return; // no policy: today's behaviour
    if (check.action === 'terminal.send') return rawInput(policy, check, callerOf(check.owner));

    const fallback: PolicyDecision = policy?.default ?? 'ask';
    let line: ParsedLine = { commands: [], undecidable: [] };
    let verdict: LineVerdict;
    let failed: unknown = null;
    try {
      if (check.action === 'terminal.open') {
        line = { commands: [{ argv: [check.command], text: check.command, redirects: [] }], undecidable: [] };
        verdict = judgeTerminal(check.command, policy?.rules ?? [], fallback);
      } else {
        line = (await loadShellParser()).parse(check.command);
        verdict = judgeLine(line, policy?.rules ?? [], fallback, check.escalate !== undefined);
      }
    } catch (error) {
      failed = error; // the policy itself failed: fail closed
      verdict = {
        decision: 'deny',
        reason: `the policy failed (${String(error)}); failing closed`,
        undecidable: [],
      };
    }
    const request: PolicyRequest = Object.freeze({
      action: check.action,
      caller: callerOf(check.owner),
      command: check.command,
      commands: line.commands,
      undecidable: verdict.undecidable,
      verdict: verdict.decision,
      reason: verdict.reason,
      cwd: check.cwd,
      sandbox: binding?.sandbox ?? options.sandbox ?? NO_SANDBOX,
      escalate: check.escalate ?? null,
      justification: check.justification ?? check.escalate?.justification ?? null,
    });
    const record = (
      outcome: 'allow' | 'deny' | 'cancelled',
      decidedBy: DecidedBy,
      reason: string,
      askMs: number | null,
    ) => {
      try {
        policy?.onDecision?.({ at: Date.now(), request, outcome, decidedBy, reason, askMs });
      } catch {
        // A broken audit hook must not change a decision.
      }
    };
    const deny = (decidedBy: DecidedBy, reason: string, askMs: number | null = null): never => {
      record('deny', decidedBy, reason, askMs);
      throw new PolicyDeniedError(request, decidedBy, reason);
    };

    if (failed !== null) deny('error', verdict.reason);
    if (verdict.decision === 'deny') deny('rule', verdict.reason);
    if (verdict.decision === 'allow') return record('allow', 'rule', verdict.reason, null);
    const approve = policy?.approve;
    if (approve === undefined) {
      deny('rule', `${verdict.reason}; it needs approval and no approver is configured`);
      return;
    }
    asking++;
    const started = performance.now();
    try {
      const answer = await askApprover(approve, request, {
        timeoutMs: policy?.askTimeoutMs ?? DEFAULT_ASK_TIMEOUT_MS,
        lifetime: lifetime.signal,
        ...(check.signal ? { signal: check.signal } : {}),
      });
      const askMs = performance.now() - started;
      if (answer.outcome === 'cancelled') {
        record('cancelled', 'approver', answer.error.message, askMs);
        throw answer.error;
      }
      if (answer.outcome === 'deny') deny(answer.decidedBy, answer.reason, askMs);
      record('allow', 'approver', answer.reason, askMs);
    } finally {
      asking--;
    }
  };

  return {
    decide,
    bind(owner, binding) {
      if (binding.policy !== undefined) assertPolicy(binding.policy, 'policy');
      bindings.set(owner, binding);
    },
    get asking() {
      return asking;
    },
    dispose: () => lifetime.abort(),
  };
}

// Raw terminal input cannot be judged by rules (SPEC A1): the terminal's own decision and its
// sandbox are the guard, unless the host wants `execute` only.
function rawInput(policy: Policy | undefined, check: PolicyCheck, caller: PolicyCaller): void {
  const refuse = (reason: string): never => {
    const request: PolicyRequest = {
      action: 'terminal.send',
      caller,
      command: check.command,
      commands: [],
      undecidable: ['raw terminal input'],
      verdict: 'deny',
      reason,
      cwd: check.cwd,
      sandbox: NO_SANDBOX,
      escalate: null,
      justification: null,
    };
    throw new PolicyDeniedError(request, 'rule', reason);
  };
  if (policy?.rawInput === 'deny')
    refuse('this policy accepts commands only through execute (rawInput: deny)');
  if (check.hidden) refuse('a hidden terminal takes commands only through execute, where each is judged');
}

/**
 * Checks a policy object (INVALID_ARGUMENT naming the field).
 *
 * @example
 * ```ts
 * assertPolicy({ default: 'deny' }, 'agents.create({ policy })');
 * ```
 */
export function assertPolicy(policy: unknown, what: string): asserts policy is Policy {
  assertArgument(
    typeof policy === 'object' && policy !== null,
    `${what} must be an object { rules?, approve?, … }`,
  );
  const p = policy as Policy;
  if (p.rules !== undefined) assertRules(p.rules);
  assertArgument(
    p.approve === undefined || typeof p.approve === 'function',
    `${what}.approve must be a function (request, signal) => 'allow' | 'deny'`,
  );
  assertArgument(
    p.default === undefined || ['allow', 'ask', 'deny'].includes(p.default),
    `${what}.default must be 'allow', 'ask' or 'deny'`,
  );
  assertArgument(
    p.rawInput === undefined || p.rawInput === 'allow' || p.rawInput === 'deny',
    `${what}.rawInput must be 'allow' or 'deny'`,
  );
  assertArgument(
    p.askTimeoutMs === undefined || (Number.isSafeInteger(p.askTimeoutMs) && p.askTimeoutMs > 0),
    `${what}.askTimeoutMs must be a positive integer of milliseconds`,
  );
  assertArgument(
    p.onDecision === undefined || typeof p.onDecision === 'function',
    `${what}.onDecision must be a function`,
  );
}
