import type { SandboxDescription } from '../sandbox/sandbox-types.js';

/** What the sandbox refused, as read from a failed command's output (A4). */
export interface SandboxRefusal {
  readonly kind: 'write' | 'read' | 'network';
  /** The path the error names, when it names one. */
  readonly path: string | null;
}

const EROFS = /Read-only file system/;
const EACCES = /Permission denied/;
const NETWORK =
  /Network is unreachable|Could not resolve host|Temporary failure in name resolution|Name or service not known|ENETUNREACH|EAI_AGAIN|ENOTFOUND|Connection refused|ECONNREFUSED/;
const PATH = /(?:^|[\s'"`‘(])(\/[^\s'"`’:)]*)/;

/**
 * A4: the refusals a sandboxed command's output shows, told apart from ordinary failures by
 * the sandbox's own signatures: EROFS is only the sandbox's doing here (the host's writable
 * paths are read-only inside); EACCES counts when it names a denied path; a network error
 * counts only with `network: 'none'`. An exit code of 0 is never a refusal.
 *
 * @example
 * ```ts
 * sandboxRefusals("touch: cannot touch '/etc/x': Read-only file system\n", 1, sandbox);
 * // [{ kind: 'write', path: '/etc/x' }]
 * ```
 */
export function sandboxRefusals(
  output: string,
  exitCode: number | null,
  sandbox: SandboxDescription,
): SandboxRefusal[] {
  if (exitCode === 0 || sandbox.mode === 'off') return [];
  const found: SandboxRefusal[] = [];
  const seen = new Set<string>();
  const add = (refusal: SandboxRefusal) => {
    const key = `${refusal.kind}:${refusal.path ?? ''}`;
    if (!seen.has(key) && found.length < 5) {
      seen.add(key);
      found.push(refusal);
    }
  };
  for (const line of output.split('\n')) {
    const path = PATH.exec(line)?.[1] ?? null;
    if (EROFS.test(line)) add({ kind: 'write', path });
    else if (EACCES.test(line) && path !== null && sandbox.denyRead.some((d) => within(path, d))) {
      add({ kind: 'read', path });
    } else if (sandbox.network === 'none' && NETWORK.test(line)) add({ kind: 'network', path: null });
  }
  return found;
}

/**
 * The bracketed lines a model reads after a command the sandbox refused (A4): that it ran
 * sandboxed, what was refused, and how to ask for escalation. Empty when nothing was.
 *
 * @example
 * ```ts
 * const note = sandboxNote(result.output, result.exitCode, result.sandbox);
 * ```
 */
export function sandboxNote(output: string, exitCode: number | null, sandbox: SandboxDescription): string {
  const refusals = sandboxRefusals(output, exitCode, sandbox);
  if (refusals.length === 0) return '';
  const writable =
    sandbox.writableRoots.length > 0
      ? `${sandbox.writableRoots.join(', ')} and a private /tmp`
      : 'only a private /tmp';
  const what = refusals.map((r) => {
    if (r.kind === 'write')
      return `writing ${r.path ? `'${r.path}'` : 'a file'} (outside the writable roots)`;
    if (r.kind === 'read') return `reading '${r.path}' (a denied path)`;
    return 'network access (the sandbox has no network)';
  });
  return (
    `[sandbox: this command ran in a ${sandbox.mode} sandbox (writable: ${writable}; network: ${sandbox.network}). ` +
    `Refused by the sandbox: ${what.join('; ')}. If the task truly needs this, call bash again with ` +
    'escalate: true and a justification saying why; it runs outside the sandbox only if it is approved.]'
  );
}

function within(path: string, root: string): boolean {
  return path === root || path.startsWith(`${root}/`);
}
