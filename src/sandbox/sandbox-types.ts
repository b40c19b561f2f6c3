/**
 * Where a command runs (SPEC A3): the sandbox options of a runtime (`createRuntime({ sandbox })`)
 * or of one agent (`agents.create({ sandbox })`, which replaces the runtime's). This module only
 * names the shape: the policy step shows it to the approver (A1), the sandbox provider enforces
 * it. Shared by both, so it imports nothing.
 *
 * @example
 * ```ts
 * const sandbox: SandboxOptions = { mode: 'workspace-write', network: 'none' };
 * const rt = await createRuntime({ sandbox });
 * ```
 */
export interface SandboxOptions {
  /** `off`: the host as it is; `read-only`: nothing writable but a private /tmp; `workspace-write`: also the writable roots. */
  readonly mode: SandboxMode;
  /** Directories a `workspace-write` command may write; default: its working directory. */
  readonly writableRoots?: readonly string[];
  /** `none` (default): a network namespace of its own; `host`: the host's network. */
  readonly network?: SandboxNetwork;
  /** Paths the command cannot read (a documented default list of credential directories). */
  readonly denyRead?: readonly string[];
}

/**
 * The sandbox modes (SPEC A3).
 *
 * @example
 * ```ts
 * const mode: SandboxMode = 'read-only';
 * ```
 */
export type SandboxMode = 'off' | 'read-only' | 'workspace-write';

/**
 * Network access inside a sandbox (SPEC A3): all or nothing.
 *
 * @example
 * ```ts
 * const network: SandboxNetwork = 'host';
 * ```
 */
export type SandboxNetwork = 'none' | 'host';

/** The modes, for validation and usage texts. */
export const SANDBOX_MODES: readonly SandboxMode[] = ['off', 'read-only', 'workspace-write'];
