import { describe, expect, it } from 'vitest';
import { MarkerFilter } from '../../src/terminals/marker-filter.js';
import { executeLine } from '../../src/terminals/shell-protocol.js';

const start = (nonce: string) => `\x1b]697;S;${nonce}\x07`;
const end = (nonce: string, code: number) => `\x1b]697;E;${nonce};${code}\x07`;

describe('MarkerFilter', () => {
  it('T7: the echo of the wrapper line becomes the command as typed, whatever the batch boundaries', () => {
    const line = executeLine('n1', 'echo "a!"\necho b');
    const raw = `$ ${line.slice(0, -1)}\r\n${start('n1')}a!\r\nb\r\n${end('n1', 0)}$ `;
    // Every split point of the stream gives the same transcript.
    for (let cut = 0; cut <= raw.length; cut += 7) {
      const filter = new MarkerFilter();
      filter.expectEcho('n1', line, 'echo "a!"\necho b');
      const out =
        filter.push(raw.slice(0, cut)) + filter.push(raw.slice(cut)) + filter.push(filter.endEcho());
      expect(out).toBe('$ echo "a!"\r\n> echo b\r\na!\r\nb\r\n$ ');
    }
  });

  it('T7: an echo whose start marker never came is released as output, the wrapper shown as the command', () => {
    const line = executeLine('n2', 'sleep 1');
    const filter = new MarkerFilter();
    filter.expectEcho('n2', line, 'sleep 1');
    expect(filter.push(`${line.slice(0, -1)}\r\nprogram output\r\n`)).toBe('');
    expect(filter.push(filter.endEcho())).toBe('sleep 1\r\nprogram output\r\n');
    expect(filter.push('later')).toBe('later');
  });

  it('holds back a split marker and removes markers when no echo is expected', () => {
    const filter = new MarkerFilter();
    expect(filter.push('a\x1b]697;E;n')).toBe('a');
    expect(filter.push('1;0\x07b')).toBe('b');
  });
});
