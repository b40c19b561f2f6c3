import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/index.js';
import type { InputProbe, SubprocessProvider } from '../../src/subprocess/types.js';
import { localTerminalsWith } from '../support/local-terminals.js';

let rt: Runtime | null = null;
afterEach(async () => {
  await rt?.dispose();
  rt = null;
});

// The local terminals, with every input-wait probe answered by `probe` (given the real one).
function providerProbing(
  probe: (real: () => Promise<InputProbe>) => Promise<InputProbe>,
): SubprocessProvider {
  return localTerminalsWith('no-proof', (h) => ({ probeInput: () => probe(() => h.probeInput()) }));
}

describe('terminal service: wait reasons come from the handle alone (T5, T6)', () => {
  it.each<[string, InputProbe]>([
    ['unknown', { unknown: 'no proof on this placement' }],
    ['waiting: false', { waiting: false, reason: 'not-waiting' }],
  ])(
    'T6: a provider answering %s gets inferred_idle for `read x`, never stdin_read',
    async (_name, answer) => {
      // Like a remote provider without a proof mechanism: every probe gets `answer`.
      const provider = providerProbing(async () => answer);
      rt = await createRuntime({ provider, limits: { cleanupGraceMs: 300 } });
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

  it('T5: a fresh wait whose processes have not read the input since the write is no proof (readBytes)', async () => {
    // The real probes, but the read count stays where the first probe saw it: what a loaded
    // machine shows when the shell is back in its wait before the rest of the line arrived.
    let frozen: number | undefined;
    const provider = providerProbing(async (real) => {
      const answer = await real();
      if ('unknown' in answer) return answer;
      frozen ??= answer.readBytes;
      if (frozen === undefined) throw new Error('the local terminal reports no readBytes');
      return { ...answer, readBytes: frozen };
    });
    rt = await createRuntime({ provider, limits: { cleanupGraceMs: 300 } });
    const owner = rt.owners.host().token;
    const t = await rt.terminals.open(owner);
    await rt.terminals.execute(owner, t.id, 'true'); // the first prompt is drawn and waited for
    frozen = undefined;
    const sent = await rt.terminals.send(owner, t.id, 'read x\r', { settleMs: 400 });
    expect(sent.waitReason).toBe('inferred_idle');
  });

  it('T5: the same wait with the read count the terminal reports is proven stdin_read', async () => {
    const counts: number[] = [];
    const provider = providerProbing(async (real) => {
      const answer = await real();
      if (!('unknown' in answer) && answer.readBytes !== undefined) counts.push(answer.readBytes);
      return answer;
    });
    rt = await createRuntime({ provider, limits: { cleanupGraceMs: 300 } });
    const owner = rt.owners.host().token;
    const t = await rt.terminals.open(owner);
    await rt.terminals.execute(owner, t.id, 'true');
    counts.length = 0;
    // A 10-minute settle: only the proof can end this send.
    const sent = await rt.terminals.send(owner, t.id, 'read x\r', { settleMs: 600_000 });
    expect(sent.waitReason).toBe('stdin_read');
    // bash read the 7 bytes of the line (one at a time, through readline) before waiting again.
    expect(counts.at(-1)! - counts[0]!).toBeGreaterThanOrEqual(7);
  });
});
