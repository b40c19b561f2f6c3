// The option objects of calls whose command a layer above already decided (SPEC A1): the
// persistent bash decides each command once, then opens and executes in its hidden terminal
// with these. Not exported from the package: a caller cannot mark its own calls.
const passed = new WeakSet<object>();

/**
 * Marks an options object as carrying a decision already made for this call, and returns it.
 *
 * @example
 * ```ts
 * await terminals.execute(owner, id, command, passDecision({ timeoutMs }));
 * ```
 */
export function passDecision<T extends object>(options: T): T {
  passed.add(options);
  return options;
}

/**
 * Whether `options` was marked by {@link passDecision}.
 *
 * @example
 * ```ts
 * if (!decisionPassed(opts)) await decide({ action: 'terminal.execute', owner, command, cwd });
 * ```
 */
export function decisionPassed(options: object | undefined): boolean {
  return options !== undefined && passed.has(options);
}
