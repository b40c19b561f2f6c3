import { afterEach, expect } from 'vitest';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';

// After every test: no process tagged by this test process is alive (zombies count as dead).
afterEach(async () => {
  let alive = listTaggedProcesses(treeIdPrefix());
  // A tree the test just finished with may take a moment to be reaped by its parent.
  for (let i = 0; i < 50 && alive.length > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    alive = listTaggedProcesses(treeIdPrefix());
  }
  expect(alive, 'tagged processes left alive by this test').toEqual([]);
});
