import { tmpdir } from 'node:os';
import { stdinProofSupported } from '../../src/subprocess/input-probe/stdin-probe.js';
import { createLocalProvider } from '../../src/subprocess/local-provider.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { startSpawner } from '../../src/subprocess/spawner/spawner.js';
import { providerContract } from './contract.js';

// The local provider runs the contract unchanged; the host check is this machine's /proc.
// Without the spawner its children come from `child_process`, which passes on what this process
// inherited without close-on-exec (the spawner closes it, tether-spawner.c).
providerContract('local', () => {
  const provider = createLocalProvider();
  return {
    provider,
    cwd: tmpdir(),
    provesInput: stdinProofSupported(),
    passesHostFds: true,
    host: { livePids: (treeId) => listTaggedProcesses(treeId) },
    dispose: () => provider.dispose(),
  };
});

// The same contract with children started by the spawner process (P1), as a runtime does.
providerContract('local, through the spawner', () => {
  const spawner = startSpawner();
  if (spawner === null) throw new Error('build/tether-spawner is missing: run `npm install` (it builds it)');
  const provider = createLocalProvider({ spawner });
  return {
    provider,
    cwd: tmpdir(),
    provesInput: stdinProofSupported(),
    host: { livePids: (treeId) => listTaggedProcesses(treeId) },
    dispose: async () => {
      await provider.dispose();
      await spawner.dispose();
    },
  };
});
