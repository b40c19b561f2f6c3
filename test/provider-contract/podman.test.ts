import { afterAll } from 'vitest';
import { createContainerProvider } from '../../src/remote/container-provider.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { removeContainer, removeStaleContainers, startContainer } from '../support/container-image.js';
import { providerContract } from './contract.js';

// X5: the exec provider over `podman exec -i` runs the same contract, in one container of an
// image built from this host's own files (test/support/container-image.ts). The container's
// processes are this kernel's: the host check reads their markers from this machine's /proc.
let container: Promise<string> | null = null;
afterAll(async () => {
  if (container !== null) removeContainer(await container);
});

providerContract('podman', async () => {
  if (container === null) {
    removeStaleContainers();
    container = startContainer();
  }
  const provider = createContainerProvider({
    engine: 'podman',
    container: await container,
    heartbeat: { intervalMs: 500, countMax: 4 },
    reconnect: { attempts: 3, delayMs: 200 },
    lingerMs: 20_000,
  });
  return {
    provider,
    cwd: '/tmp',
    provesInput: true,
    host: { livePids: (treeId) => listTaggedProcesses(treeId) },
    dispose: () => provider.dispose(),
  };
});
