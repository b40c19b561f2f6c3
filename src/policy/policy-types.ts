import type { AgentOwnerToken } from '../owners/owner-token.js';
import type { SandboxOptions } from '../sandbox/sandbox-types.js';

/**
 * What a rule or the policy says about a command (SPEC A1, A2).
 *
 * @example
 * ```ts
 * const d: PolicyDecision = 'ask';
 * ```
 */
export type PolicyDecision = 'allow' | 'ask' | 'deny';

/**
 * Who settled a denial (SPEC A1): a rule or the default (`rule`), the host's approver
 * (`approver`), nobody in time (`timeout`), or a policy or approver that threw (`error`).
 *
 * @example
 * ```ts
 * if (err.code === 'POLICY_DENIED' && err.decidedBy === 'timeout') askAgainLater();
 * ```
 */
export type DecidedBy = 'rule' | 'approver' | 'timeout' | 'error';

/**
 * A rule (SPEC A2): matches a simple command whose first argv words are `prefix`. A first word
 * without a slash names a command: for `deny` and `ask` it also matches any path ending in it
 * (`/bin/rm` for `rm`); an `allow` matches only the bare name (a planted `./git` is not `git`).
 *
 * @example
 * ```ts
 * const rules: PolicyRule[] = [
 *   { decision: 'allow', prefix: ['git', 'status'] },
 *   { decision: 'deny', prefix: ['rm', '-rf'] },
 * ];
 * ```
 */
export interface PolicyRule {
  readonly decision: PolicyDecision;
  readonly prefix: readonly string[];
}

/**
 * Which entry of the runtime is starting something (SPEC A1). `terminal.send` is raw input
 * into a terminal that is already open.
 *
 * @example
 * ```ts
 * if (request.action === 'terminal.open') return 'allow';
 * ```
 */
export type PolicyAction =
  | 'shell.run'
  | 'shell.background'
  | 'terminal.open'
  | 'terminal.execute'
  | 'persistent-bash'
  | 'terminal.send';

/**
 * One simple command of a parsed line (SPEC A2): its argv words, `null` where a word is only
 * known at run time (a variable, a glob, a substitution).
 *
 * @example
 * ```ts
 * // 'git log $REF > out.txt'
 * const c: SimpleCommand = { argv: ['git', 'log', null], text: 'git log $REF', redirects: ['out.txt'] };
 * ```
 */
export interface SimpleCommand {
  readonly argv: readonly (string | null)[];
  /** The command as written in the line. */
  readonly text: string;
  /** Redirection targets as written (`> out.txt` gives `out.txt`). */
  readonly redirects: readonly string[];
  /**
   * Set when the command is not written in the line but in a word bash evaluates (SPEC A6):
   * a `trap` string, a prompt, a quoted subscript (`"the word 'a[$(rm w)]' of \`let\`"`).
   */
  readonly via?: string;
}

/**
 * Who is asking, never the token (SPEC A1, O1): an agent publication, a host lease, or a
 * runtime call made without an owner (`rt.shell.run` with no `owner`).
 *
 * @example
 * ```ts
 * if (request.caller.kind === 'agent') console.log(request.caller.sessionId);
 * ```
 */
export type PolicyCaller =
  | { readonly kind: 'agent'; readonly owner: string; readonly sessionId: string; readonly agentId: string }
  | { readonly kind: 'host'; readonly owner: string }
  | { readonly kind: 'runtime' };

/**
 * What the approver sees (SPEC A1): the caller, the command and its parsed simple commands,
 * the cwd, the sandbox it would run in, the escalation asked for, and the model's words.
 *
 * @example
 * ```ts
 * approve: async (request) => (request.escalate ? 'deny' : 'allow'),
 * ```
 */
export interface PolicyRequest {
  readonly action: PolicyAction;
  readonly caller: PolicyCaller;
  /** The command line as the caller wrote it (for `terminal.open`: the shell). */
  readonly command: string;
  /** Every simple command of the line; empty when the line could not be parsed. */
  readonly commands: readonly SimpleCommand[];
  /** Why no rule may allow this line (command substitution, eval, …); empty when none. */
  readonly undecidable: readonly string[];
  /** What the rules and the default said before anyone was asked. */
  readonly verdict: PolicyDecision;
  /**
   * Why, in words (A6: the evaluated word, the lookup change or the wrapped program that made
   * it `ask`), e.g. "`setsid rm x` (which runs `rm x`) …".
   */
  readonly reason: string;
  readonly cwd: string;
  /** The sandbox the command would run in (`{ mode: 'off' }` when none is configured). */
  readonly sandbox: SandboxOptions;
  /** Set when the command asks to run outside that sandbox (SPEC A4). */
  readonly escalate: { readonly justification: string } | null;
  /** The model's justification, when it gave one. */
  readonly justification: string | null;
}

/**
 * What an approver answers: a decision, optionally with the reason the model will read.
 *
 * @example
 * ```ts
 * const answer: Approval = { decision: 'deny', reason: 'not on a Friday' };
 * ```
 */
export type Approval = 'allow' | 'deny' | { readonly decision: 'allow' | 'deny'; readonly reason?: string };

/**
 * The host's approver (SPEC A1). `signal` aborts when the ask ends without it (timeout, the
 * call was cancelled, the runtime is disposed): stop asking then. A throw or any other answer
 * denies (fail closed).
 *
 * @example
 * ```ts
 * const approve: Approver = async (request, signal) => ui.confirm(request.command, { signal });
 * ```
 */
export type Approver = (request: PolicyRequest, signal: AbortSignal) => Approval | Promise<Approval>;

/**
 * One decision as a fact (SPEC A1; the observability stream wires this hook later): what was
 * asked, the outcome, who settled it, how long an ask took.
 *
 * @example
 * ```ts
 * onDecision: (fact) => audit.write(JSON.stringify(fact)),
 * ```
 */
export interface PolicyDecisionFact {
  readonly at: number;
  readonly request: PolicyRequest;
  readonly outcome: 'allow' | 'deny' | 'cancelled';
  readonly decidedBy: DecidedBy;
  readonly reason: string;
  /** ms the approver took; `null` when nobody was asked. */
  readonly askMs: number | null;
}

/**
 * A policy (SPEC A1, A2): `createRuntime({ policy })`, replaced per agent by
 * `agents.create({ policy })`. Without one, everything is allowed (and escalation denied:
 * there is nobody to ask).
 *
 * @example
 * ```ts
 * const policy: Policy = {
 *   rules: [{ decision: 'allow', prefix: ['npm', 'test'] }, { decision: 'deny', prefix: ['rm'] }],
 *   default: 'ask',
 *   approve: async (request) => (request.command.startsWith('git ') ? 'allow' : 'deny'),
 *   askTimeoutMs: 30_000,
 * };
 * ```
 */
export interface Policy {
  readonly rules?: readonly PolicyRule[];
  /** Asked on `ask`; without it, `ask` denies. */
  readonly approve?: Approver;
  /** How long an ask may take; then it denies (`decidedBy: 'timeout'`). Default 60,000. */
  readonly askTimeoutMs?: number;
  /** For a simple command no rule matches. Default `'ask'`. */
  readonly default?: PolicyDecision;
  /**
   * Raw input into a terminal (`terminals.send`, `terminal_send`) cannot be judged by rules:
   * `allow` (default) lets it through in terminals opened under this policy, `deny` refuses
   * it, so only `execute` (judged per command) reaches a shell.
   */
  readonly rawInput?: 'allow' | 'deny';
  /** Called with every decision this policy makes (a throw is ignored). */
  readonly onDecision?: (fact: PolicyDecisionFact) => void;
}

/**
 * What a service hands the policy step at its entry (SPEC A1).
 *
 * @example
 * ```ts
 * await decide({ action: 'shell.run', command: req.command, cwd, signal: req.signal });
 * ```
 */
export interface PolicyCheck {
  readonly action: PolicyAction;
  readonly owner?: AgentOwnerToken;
  readonly command: string;
  readonly cwd: string;
  readonly escalate?: { readonly justification: string };
  readonly justification?: string;
  /** The call's signal: aborting it ends a pending ask with `ABORTED`. */
  readonly signal?: AbortSignal;
  /** `terminal.send` into a hidden terminal (the persistent bash's): never raw input. */
  readonly hidden?: boolean;
}

/**
 * The policy step (SPEC A1): resolves when the start may go on, throws `POLICY_DENIED` (a
 * {@link PolicyDeniedError}) when it may not, `ABORTED` when the call's signal ended an ask.
 *
 * @example
 * ```ts
 * const decide: PolicyStep = gate.decide;
 * await decide({ action: 'terminal.open', owner, command: '/bin/bash', cwd: '/repo' });
 * ```
 */
export type PolicyStep = (check: PolicyCheck) => Promise<void>;
