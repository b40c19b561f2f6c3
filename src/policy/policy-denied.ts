import { TetherError } from '../errors.js';
import type { DecidedBy, PolicyRequest } from './policy-types.js';

/**
 * A start the policy refused (SPEC A1): code `POLICY_DENIED`, with why (`reason`), who settled
 * it (`decidedBy`) and what was asked (`request`, which never holds the owner token). Nothing
 * was started or registered.
 *
 * @example
 * ```ts
 * try { await rt.shell.run({ command: 'rm -rf ~', owner }); }
 * catch (err) {
 *   if (err instanceof PolicyDeniedError) console.log(err.decidedBy, err.reason);
 * }
 * ```
 */
export class PolicyDeniedError extends TetherError {
  readonly reason: string;
  readonly decidedBy: DecidedBy;
  readonly request: PolicyRequest;

  constructor(request: PolicyRequest, decidedBy: DecidedBy, reason: string, options?: { cause?: unknown }) {
    super('POLICY_DENIED', `the policy refused ${describeAction(request)}: ${reason}`, options);
    this.reason = reason;
    this.decidedBy = decidedBy;
    this.request = request;
  }
}

// "running `rm -rf /`", "opening a terminal (/bin/bash)", … — what was refused, in words.
function describeAction(request: PolicyRequest): string {
  const command = request.command.length > 200 ? `${request.command.slice(0, 199)}…` : request.command;
  const outside = request.escalate ? ' outside the sandbox' : '';
  switch (request.action) {
    case 'terminal.open':
      return `opening a terminal (${command})`;
    case 'terminal.send':
      return 'raw input into a terminal';
    case 'shell.background':
      return `starting \`${command}\` as a background job${outside}`;
    default:
      return `running \`${command}\`${outside}`;
  }
}
