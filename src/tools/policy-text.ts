import type { PolicyDeniedError } from '../policy/policy-denied.js';

/**
 * What a model should do after a denial (A1, A4), by who denied it: words it can act on,
 * never an invitation to rephrase its way past a rule.
 *
 * @example
 * ```ts
 * failure('POLICY_DENIED', err.message, policyNextStep(err));
 * ```
 */
export function policyNextStep(err: PolicyDeniedError): string {
  const { decidedBy, request } = err;
  const nothing = 'Nothing was started.';
  if (request.action === 'terminal.send') {
    return 'Nothing was sent. This session accepts no raw terminal input: use the bash tool instead, which judges each command.';
  }
  switch (decidedBy) {
    case 'approver':
      return `${nothing} The approval step refused it (the reason is above): do not retry it or a variant of it. Ask the user how to proceed, or do the task another way.`;
    case 'timeout':
      return `${nothing} Nobody answered the approval request in time. Tell the user what you need and why, then try again once they are there.`;
    case 'error':
      return `${nothing} The approval step failed, so the command was refused to be safe. Tell the user; retrying will likely fail the same way.`;
    default:
      if (request.escalate) {
        return `${nothing} Running outside the sandbox needs a person to approve it, and none can be asked here. Do the task inside the sandbox, or ask the user to run the command themselves.`;
      }
      if (request.undecidable.length > 0 && request.verdict !== 'deny') {
        return `${nothing} Rules cannot judge command substitution, eval, bash -c and similar shapes, and no one could be asked to approve it. Write the command as plain simple commands (no $(...), backticks, eval or bash -c) and run it again.`;
      }
      return `${nothing} A rule of this session's policy refuses it: do not retry it or disguise it (paths, wrappers and quoting are seen through). Do the task another way, or ask the user to allow it.`;
  }
}
