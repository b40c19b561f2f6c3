import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/index.js';
import { createLocalProvider } from '../../src/subprocess/local-provider.js';
import type { InputProbe, SubprocessProvider, TerminalHandle } from '../../src/subprocess/types.js';

let rt: Runtime | null = null;
afterEach(async () => {
  await rt?.dispose();
  rt = null;
});

// A provider like a remote one without a proof mechanism: the local terminals, but every
// input-wait probe is answered with `answer` (what the seam lets such a provider say).
function providerAnswering(answer: InputProbe): SubprocessProvider {
  const local = createLocalProvider();
  return {
    name: 'no-proof',
    spawn: (spec) => local.spawn(spec),
    async spawnTerminal(spec): Promise<TerminalHandle> {
      const h = await local.spawnTerminal(spec);
      return {
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
        probeInput: async () => answer,
      };
    },
    get workers() {
      return local.workers;
    },
    dispose: () => local.dispose(),
  };
}

describe('terminal service: wait reasons come from the handle alone (T5, T6)', () => {
  it.each<[string, InputProbe]>([
    ['unknown', { unknown: 'no proof on this placement' }],
    ['waiting: false', { waiting: false, reason: 'not-waiting' }],
  ])(
    'T6: a provider answering %s gets inferred_idle for `read x`, never stdin_read',
    async (_name, answer) => {
      rt = await createRuntime({ provider: providerAnswering(answer), limits: { cleanupGraceMs: 300 } });
      const owner = rt.owners.host().token;
      const t = await rt.terminals.open(owner);
      let seen = '';
      let reason = '';
      // Until the prompt shows, then once more: the shell waits in `read` the whole time.
      for (let i = 0; i < 40 && !/name\? /.test(seen); i++) {
        const r = await rt.terminals.send(owner, t.id, i === 0 ? 'read -p "name? " x\n' : '', {
          settleMs: 300,
        });
        seen += r.output;
        reason = r.waitReason;
      }
      expect(seen).toMatch(/name\? /);
      const again = await rt.terminals.send(owner, t.id, '', { settleMs: 300 });
      expect([reason, again.waitReason]).toEqual(['inferred_idle', 'inferred_idle']);
    },
  );
});
