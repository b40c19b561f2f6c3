import { createLocalProvider } from '../../src/subprocess/local-provider.js';
import type { SubprocessProvider, TerminalHandle } from '../../src/subprocess/types.js';

/**
 * The local provider with its terminal handles cut down to the seam's required members (no
 * `watchMarked`, no `settled`: what a minimal provider gives) and `override` applied on top,
 * e.g. a probe that answers differently. The runtime owns and disposes it as any provider.
 */
export function localTerminalsWith(
  name: string,
  override: (handle: TerminalHandle) => Partial<TerminalHandle> = () => ({}),
): SubprocessProvider {
  const local = createLocalProvider();
  return {
    name,
    spawn: (spec) => local.spawn(spec),
    async spawnTerminal(spec): Promise<TerminalHandle> {
      const h = await local.spawnTerminal(spec);
      const handle: TerminalHandle = {
        identity: h.identity,
        treeId: h.treeId,
        ttyPath: h.ttyPath,
        exited: h.exited,
        get lastOutputAt() {
          return h.lastOutputAt;
        },
        write: (data) => h.write(data),
        resize: (cols, rows) => h.resize(cols, rows),
        onData: (listener) => h.onData(listener),
        signal: (signal, target) => h.signal(signal, target),
        signalForeground: (signal) => h.signalForeground(signal),
        kill: () => h.kill(),
        probeInput: () => h.probeInput(),
      };
      // Assigned, not spread: a spread would freeze the lastOutputAt getter's current value.
      return Object.assign(handle, override(h));
    },
    get workers() {
      return local.workers;
    },
    dispose: () => local.dispose(),
  };
}
