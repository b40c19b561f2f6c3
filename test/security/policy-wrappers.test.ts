import { describe, it } from 'vitest';
import { assertHeldOnEveryEntry, type Shape } from './policy-entries.js';

const wrapped = (name: string, prefix: string): Shape => ({
  name,
  line: (w) => `${prefix} rm ${w}`,
  why: /rule deny \[rm\] matches .*which runs `rm /,
});

const shapes: Shape[] = [
  wrapped('setsid', 'setsid -w'),
  wrapped('flock', 'flock ./lock'),
  wrapped('taskset', 'taskset 0x1'),
  wrapped('ionice', 'ionice -c 3'),
  wrapped('chrt', 'chrt -o 0'),
  wrapped('setpriv', 'setpriv --nnp'),
  { name: 'script -c', line: (w) => `script -qc 'rm ${w}' /dev/null`, why: /rule deny \[rm\]/ },
  // Not in the table: asked, and the approver is told which denied program it names.
  {
    name: 'an unknown program',
    line: (w) => `cp /usr/bin/setsid ./launch && ./launch -w rm ${w}`,
    why: /not a known wrapper .*arguments name `rm`/,
  },
];

describe('policy: wrapper programs (A6)', () => {
  it('A6: the program a wrapper starts (setsid, flock, taskset, ionice, chrt, setpriv, script -c) is judged, and an unknown program naming a denied one asks, on every entry', async () => {
    await assertHeldOnEveryEntry(shapes);
  }, 120_000);
});
