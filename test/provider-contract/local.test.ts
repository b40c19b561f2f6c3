import { tmpdir } from 'node:os';
import { stdinProofSupported } from '../../src/subprocess/input-probe/stdin-probe.js';
import { createLocalProvider } from '../../src/subprocess/local-provider.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { providerContract } from './contract.js';

// The local provider runs the contract unchanged; the host check is this machine's /proc.
providerContract('local', () => {
  const provider = createLocalProvider();
  return {
    provider,
    cwd: tmpdir(),
    provesInput: stdinProofSupported(),
    host: { livePids: (treeId) => listTaggedProcesses(treeId) },
    dispose: () => provider.dispose(),
  };
});
