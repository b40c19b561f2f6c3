import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { startSshd } from '../remote/sshd-fixture.js';
import { providerContract } from './contract.js';

// X1: the SSH provider runs the same contract against a real sshd on this machine (the remote
// host is loopback, so the host check can also read its /proc for the tree markers).
providerContract('ssh', async () => {
  const sshd = await startSshd();
  const provider = sshd.provider();
  return {
    provider,
    cwd: '/tmp',
    provesInput: true,
    host: { livePids: (treeId) => listTaggedProcesses(treeId) },
    dispose: async () => {
      await provider.dispose();
      await sshd.stop();
    },
  };
});
