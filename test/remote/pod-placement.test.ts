import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TetherError } from '../../src/errors.js';
import type { Fact } from '../../src/observe/fact-types.js';
import type { PodPlacement } from '../../src/remote/pod-placement.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { coreApi } from '../../src/subprocess/containment/kube-api.js';
import { hostImage, removeStaleContainers } from '../support/container-image.js';
import { type KubeStandIn, startKubeStandIn } from '../support/kube-stand-in.js';
import { kubectlCalls } from '../support/kubectl-stand-in.js';
import { agentsExample, containerExists, startCrashChild } from '../support/placed-runtime.js';
import { until } from '../support/waits.js';

// X6 with Kubernetes pods. No cluster can run here: every test talks to a stand-in API server
// (test/support/kube-stand-in.ts: node http, Kubernetes' JSON and Status errors) that backs
// each pod with a real podman container of an image built from this host's files, and execs
// into it through a `kubectl` stand-in. What is proven is Tether's side: the API calls through
// @kubernetes/client-node, the pod it asks for, its waits, the exec provider over kubectl, the
// deletes and the recovery by label — not a cluster's behaviour.
const MAIN = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));
const NS = 'agents';
const SUFFIX = '(stand-in API server backed by podman, not a cluster)';

let image: string;
let api: KubeStandIn;
beforeAll(async () => {
  removeStaleContainers();
  image = await hostImage();
  api = await startKubeStandIn();
}, 600_000);
afterAll(async () => {
  await api?.close(); // every container it started, also when a test failed
});

function placementOf(more: Partial<PodPlacement> = {}): PodPlacement {
  return {
    engine: 'kubernetes',
    namespace: NS,
    image,
    kubeconfig: api.kubeconfig,
    context: 'stand-in',
    kubectl: api.kubectl,
    exec: { heartbeat: { intervalMs: 500, countMax: 4 }, reconnect: { attempts: 3, delayMs: 200 } },
    ...more,
  };
}
const podNames = () => api.pods().map((p) => p.metadata?.name ?? '');
const hasPod = (name: string) => podNames().includes(name);

describe('pod placement (X6)', () => {
  let rt: Runtime | null = null;
  let stateDir: string;
  const cleanups: (() => unknown)[] = [];
  beforeAll(() => {
    stateDir = mkdtempSync(join(tmpdir(), 'tether-x6-pods-'));
  });
  afterEach(async () => {
    await rt?.dispose();
    rt = null;
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

  const runtime = async () => {
    rt = await createRuntime({ cwd: '/tmp', stateDir, limits: { cleanupGraceMs: 500 } });
    return rt;
  };

  it(`X6: a placed owner runs in its own pod (its hostname, a file only the pod has), deleted after the owner retires, its trees verified dead first ${SUFFIX}`, async () => {
    const mark = mkdtempSync(join(tmpdir(), 'tether-x6-mark-'));
    cleanups.push(() => rmSync(mark, { recursive: true, force: true }));
    const nonce = `only-in-the-pod-${process.pid}-${Date.now()}`;
    writeFileSync(join(mark, 'mark'), nonce);
    const r = await runtime();
    const facts: Fact[] = [];
    let atVerdict: boolean | null = null;
    let name = '';
    r.observe((fact) => {
      facts.push(fact);
      // Synchronously, while the verdict is being reported: the pod must still be there.
      if (fact.type === 'kill.verdict' && atVerdict === null && name !== '') atVerdict = hasPod(name);
    });
    // A template as a Kubernetes user writes one: a label, a hostPath volume, a node selector.
    const lease = r.owners.host({
      placement: placementOf({
        pod: {
          metadata: { labels: { team: 'x6' } },
          spec: {
            nodeSelector: { 'kubernetes.io/os': 'linux' },
            volumes: [{ name: 'mark', hostPath: { path: mark } }],
            containers: [
              {
                name: 'work',
                image,
                volumeMounts: [{ name: 'mark', mountPath: '/pod-mark', readOnly: true }],
              },
            ],
          },
        },
      }),
    });
    const where = await r.shell.run(
      { command: `uname -n; cat /pod-mark/mark; echo; tr '\\0' ' ' < /proc/1/cmdline` },
      lease.token,
    );
    expect(where.exitCode, where.output).toBe(0);
    const [pod] = api.pods();
    name = pod?.metadata?.name ?? '';
    expect(name).toMatch(new RegExp(`^tether-${process.pid}-\\d+-\\d+-o1$`));
    const [hostname, marked, init] = where.output.split('\n');
    expect(hostname).toBe(name); // the pod's hostname is its name
    expect(marked).toBe(nonce); // a file only the pod has
    expect(existsSync('/pod-mark/mark')).toBe(false);
    expect(init).toContain('sleep infinity'); // the command Tether gave the trees' container
    expect(pod?.metadata?.labels).toMatchObject({
      team: 'x6',
      'tether.pid': String(process.pid),
      'tether.owner': 'o1',
      'tether.runtime': expect.stringMatching(new RegExp(`^${process.pid}-\\d+-\\d+$`)),
      'tether.start': expect.stringMatching(/^\d+$/),
      'tether.pidns': expect.stringMatching(/^\d+$/), // `pid:[N]` is no label value
    });
    for (const value of Object.values(pod?.metadata?.labels ?? {}))
      expect(value).toMatch(/^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/);
    expect(pod?.spec?.containers[0]).toMatchObject({ name: 'work', command: ['sleep', 'infinity'] });
    expect(pod?.spec?.restartPolicy).toBe('Never');
    // Its trees ran through kubectl exec against this pod and container.
    expect(
      kubectlCalls(api.dir).some((argv) =>
        argv
          .join(' ')
          .startsWith(
            `--kubeconfig ${api.kubeconfig} --context stand-in exec -i -n ${NS} ${name} -c work -- python3`,
          ),
      ),
    ).toBe(true);
    // Where recovery would look: recorded in the state dir before the pod was created.
    const [places] = readdirSync(join(stateDir, 'pods'));
    expect(JSON.parse(readFileSync(join(stateDir, 'pods', places!), 'utf8'))).toEqual([
      { namespace: NS, kubeconfig: api.kubeconfig, context: 'stand-in' },
    ]);
    // An ownerless command still runs on the host.
    expect((await r.shell.run({ command: 'uname -n' })).output.trim()).not.toBe(name);

    const job = await r.shell.background(lease.token, { command: 'sleep 300' });
    await until(
      'the job runs',
      () => r.stats().jobs.running,
      (n) => n === 1,
      60_000,
    );
    lease.retire();
    await until(
      'the pod is deleted',
      () => hasPod(name),
      (there) => !there,
      60_000,
    );
    const verdict = facts.find((f) => f.type === 'kill.verdict' && f.actor === `job:${job.id}`);
    expect(verdict).toMatchObject({ status: 'quiescent' });
    expect(atVerdict).toBe(true); // the trees were dead before the pod went
    expect(api.requests).toContain(`DELETE /api/v1/namespaces/${NS}/pods/${name}?gracePeriodSeconds=0`);
    await until(
      'its container is removed',
      () => containerExists(api.containerOf(NS, name)),
      (there) => !there,
      60_000,
    );
    await r.dispose();
    expect(readdirSync(join(stateDir, 'pods'))).toEqual([]); // no pods left: nothing to recover
  });

  it(`X6: an agent placed in its own pod runs the agent example of docs/agents.md unchanged ${SUFFIX}`, async () => {
    // The one change: where the agent runs. The runtime's cwd (the app) is mounted at the same path.
    const example = agentsExample((app) =>
      placementOf({
        pod: {
          spec: {
            volumes: [{ name: 'app', hostPath: { path: app } }],
            containers: [
              { name: 'agent', image, volumeMounts: [{ name: 'app', mountPath: app, readOnly: true }] },
            ],
          },
        },
      }),
    );
    cleanups.push(() => example.remove());
    const before = api.requests.length;
    const r = await example.run();
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(example.matches(r.stdout), r.stdout).toBe(true);
    const calls = api.requests.slice(before).map((line) => line.replace(/\/pods\/[^?]+/, '/pods/NAME'));
    expect(calls[0]).toBe(`POST /api/v1/namespaces/${NS}/pods`);
    expect(calls.at(-1)).toBe(`DELETE /api/v1/namespaces/${NS}/pods/NAME?gracePeriodSeconds=0`);
    expect(api.pods()).toEqual([]);
  });

  it(`X6: a pod the API refuses (403) is PROVIDER_UNAVAILABLE naming the API's message; nothing of the owner runs on this machine ${SUFFIX}`, async () => {
    api.forbid('locked');
    const r = await runtime();
    const lease = r.owners.host({ placement: placementOf({ namespace: 'locked' }) });
    const must = `/tmp/x6-pod-must-not-exist-${process.pid}`;
    const failed = await r.shell.run({ command: `touch ${must}` }, lease.token).catch((e) => e);
    expect(failed).toBeInstanceOf(TetherError);
    expect(failed).toMatchObject({ code: 'PROVIDER_UNAVAILABLE' });
    expect((failed as Error).message).toContain(
      'HTTP 403 Forbidden: pods is forbidden: User "system:serviceaccount:default:tether" cannot create resource "pods" in API group "" in the namespace "locked"',
    );
    expect((failed as Error).message).toContain('nothing of the owner runs elsewhere');
    const job = await r.shell.background(lease.token, { command: 'sleep 30' }).catch((e) => e);
    expect(job).toMatchObject({ code: 'PROVIDER_UNAVAILABLE' });
    const term = await r.terminals.open(lease.token, {}).catch((e) => e);
    expect(term).toMatchObject({ code: 'PROVIDER_UNAVAILABLE' });
    expect(r.stats().processes).toBe(0);
    expect(existsSync(must)).toBe(false);
    expect(kubectlCalls(api.dir).some((argv) => argv.includes('locked'))).toBe(false);
    lease.retire();
    await r.dispose();
    expect(api.pods()).toEqual([]);
  });

  it(`X6: a pod that never becomes ready within startTimeoutMs is PROVIDER_UNAVAILABLE naming the pod's own reason, and is deleted ${SUFFIX}`, async () => {
    const r = await runtime();
    const lease = r.owners.host({
      placement: placementOf({
        startTimeoutMs: 2000,
        pod: { spec: { nodeSelector: { disk: 'ssd' }, containers: [{ name: 'tether', image }] } },
      }),
    });
    const failed = await r.shell.run({ command: 'true' }, lease.token).catch((e) => e);
    expect(failed).toMatchObject({ code: 'PROVIDER_UNAVAILABLE' });
    expect((failed as Error).message).toContain('not ready within 2000 ms');
    expect((failed as Error).message).toContain(
      "not scheduled: Unschedulable: 0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
    );
    expect(r.stats().processes).toBe(0);
    const [pod] = podNames();
    expect(pod).toBeDefined(); // created, never ready: deleted when the owner ends
    lease.retire();
    await until(
      'the unready pod is deleted',
      () => hasPod(pod!),
      (there) => !there,
      60_000,
    );
  });

  it(`X6: an API server that does not answer the create holds neither the start beyond startTimeoutMs nor the owner's end ${SUFFIX}`, async () => {
    api.stall('stalled');
    const r = await runtime();
    const lease = r.owners.host({ placement: placementOf({ namespace: 'stalled', startTimeoutMs: 1500 }) });
    const failed = await r.shell.run({ command: 'true' }, lease.token).catch((e) => e);
    expect(failed).toMatchObject({ code: 'PROVIDER_UNAVAILABLE' });
    expect((failed as Error).message).toContain('not ready within 1500 ms (creating it:');
    expect(api.requests).toContain('POST /api/v1/namespaces/stalled/pods');
    lease.retire();
    await r.dispose(); // its delete (the create may have been done) finds no such pod
    expect(r.stats().processes).toBe(0);
    expect(api.requests.at(-1)).toMatch(/^DELETE \/api\/v1\/namespaces\/stalled\/pods\/tether-/);
  });

  it(`X6: bad options are INVALID_ARGUMENT naming the field, and nothing is created or recorded ${SUFFIX}`, async () => {
    const r = await runtime();
    const before = api.requests.length;
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ namespace: 'Agents_1' }, /placement: namespace must be a DNS-1123 label/],
      [{ image: undefined }, /placement: image must be a non-empty string \(or pod.spec.containers/],
      [{ image: '' }, /placement: image must be a non-empty string/],
      [{ container: 'Work' }, /placement: container must be a DNS-1123 label/],
      [{ startTimeoutMs: -1 }, /placement: startTimeoutMs must be a positive number, got -1/],
      [{ pod: 'pod.yaml' }, /placement: pod must be a Pod manifest/],
      [
        { pod: { spec: { containers: [{ image }] } } },
        /placement: pod.spec.containers must be an array of containers, each with a name/,
      ],
      [{ context: 7 }, /placement: context must be a non-empty string/],
      [{ exec: { connectTimeoutMs: -1 } }, /connectTimeoutMs/],
    ];
    for (const [more, message] of bad) {
      const placement = { ...placementOf(), ...more } as PodPlacement;
      expect(() => r.owners.host({ placement })).toThrow(message);
      const err = (() => {
        try {
          r.owners.host({ placement });
        } catch (e) {
          return e;
        }
      })();
      expect(err).toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    expect(() =>
      r.agents.create({
        sessionId: 'bad',
        onTurn: async () => {},
        placement: { ...placementOf(), namespace: '' },
      }),
    ).toThrow(/agent options.placement: namespace must be a DNS-1123 label/);
    const local = { name: 'x', spawn: async () => ({}), spawnTerminal: async () => ({}) } as never;
    expect(() => r.owners.host({ placement: placementOf(), provider: local })).toThrow(
      /provider or placement, not both/,
    );
    const sandboxed = await createRuntime({ cwd: '/tmp', stateDir, sandbox: { mode: 'read-only' } });
    cleanups.push(() => sandboxed.dispose());
    expect(() => sandboxed.owners.host({ placement: placementOf() })).toThrow(/sandbox: \{ mode: 'off' \}/);
    expect(api.requests.slice(before)).toEqual([]);
    expect(existsSync(join(stateDir, 'pods')) ? readdirSync(join(stateDir, 'pods')) : []).toEqual([]);
  });

  it(`X6: a runtime that places no pod never loads @kubernetes/client-node; the first pod placement loads it (not a cluster: no API server is contacted)`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tether-x6-lazy-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    // A module-resolution hook that logs every specifier naming the client (node:module register).
    writeFileSync(
      join(dir, 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  if (specifier.includes('@kubernetes/client-node')) appendFileSync(${JSON.stringify(join(dir, 'loaded'))}, specifier + '\\n');
  return next(specifier, context);
}`,
    );
    const script = `import { register } from 'node:module';
import { existsSync } from 'node:fs';
register(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});
const { createRuntime } = await import(${JSON.stringify(pathToFileURL(join(MAIN, '../../index.js')).href)});
const rt = await createRuntime({ cwd: '/tmp', stateDir: ${JSON.stringify(join(dir, 'state'))} });
const lease = rt.owners.host();
await rt.shell.run({ command: 'true' }, lease.token);
await rt.jobs.drainOwner(lease.token);
console.log('before a pod:', existsSync(${JSON.stringify(join(dir, 'loaded'))}));
const placed = rt.owners.host({ placement: { engine: 'kubernetes', namespace: 'agents', image: 'a', kubeconfig: ${JSON.stringify(join(dir, 'no-such-kubeconfig'))} } });
const err = await rt.shell.run({ command: 'true' }, placed.token).catch((e) => e);
console.log(err.code, existsSync(${JSON.stringify(join(dir, 'loaded'))}));
await rt.dispose();`;
    writeFileSync(join(dir, 'child.mjs'), script);
    const r = await execa(process.execPath, [join(dir, 'child.mjs')], { reject: false });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('before a pod: false\nPROVIDER_UNAVAILABLE true');
    expect(readFileSync(join(dir, 'loaded'), 'utf8')).toContain('@kubernetes/client-node');
  });

  it(`X6, K3: a SIGKILLed runtime's pod is deleted by label by the next runtime's recovery; a live runtime's pod and an unlabelled pod are left alone ${SUFFIX}`, async () => {
    const live = await runtime();
    const liveLease = live.owners.host({ placement: placementOf() });
    await live.shell.run({ command: 'true' }, liveLease.token);
    const [livePod] = podNames();
    const client = await coreApi({ namespace: NS, kubeconfig: api.kubeconfig, context: null });
    await client.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: 'unlabelled', labels: { app: 'other' } },
        spec: { containers: [{ name: 'c', image, command: ['sleep', 'infinity'] }] },
      },
    });
    cleanups.push(() =>
      client.deleteNamespacedPod({ name: 'unlabelled', namespace: NS, gracePeriodSeconds: 0 }),
    );

    const child = await startCrashChild(stateDir, placementOf());
    const crashed = podNames().find((n) => n.startsWith(`tether-${child.pid}-`));
    expect(crashed).toBeDefined();
    child.process.kill('SIGKILL');
    await child.exited;
    expect(hasPod(crashed!)).toBe(true); // nothing deleted it

    const next = await createRuntime({ cwd: '/tmp', stateDir, limits: { cleanupGraceMs: 300 } });
    cleanups.push(() => next.dispose());
    expect(next.recovered).toEqual([
      expect.objectContaining({
        pid: child.pid,
        containers: [],
        pods: [{ namespace: NS, name: crashed, owner: 'o1', error: null }],
      }),
    ]);
    expect(hasPod(crashed!)).toBe(false);
    await until(
      'its container is removed',
      () => containerExists(api.containerOf(NS, crashed!)),
      (there) => !there,
      60_000,
    );
    expect(podNames().sort()).toEqual([livePod, 'unlabelled'].sort());
    expect((await live.shell.run({ command: 'echo still here' }, liveLease.token)).output).toBe(
      'still here\n',
    );
  });

  it(`X6, K3: a pods record another user could write is not believed: STATE_UNTRUSTED, no API call, the pod stays until the record is private again ${SUFFIX}`, async () => {
    const child = await startCrashChild(stateDir, placementOf());
    const [crashed] = podNames();
    child.process.kill('SIGKILL');
    await child.exited;
    const [file] = readdirSync(join(stateDir, 'pods'));
    chmodSync(join(stateDir, 'pods', file!), 0o666);
    const before = api.requests.length;
    const refused = await execa(process.execPath, [MAIN, 'reap', '--state-dir', stateDir], { reject: false });
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain(`refusing the state directory ${stateDir}`);
    expect(refused.stderr).toContain('is writable by others (mode 0666)');
    expect(api.requests.slice(before)).toEqual([]);
    expect(hasPod(crashed!)).toBe(true);
    chmodSync(join(stateDir, 'pods', file!), 0o600);
    const text = await execa(process.execPath, [MAIN, 'reap', '--state-dir', stateDir], { reject: false });
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stdout).toContain('1 pod deleted');
    expect(hasPod(crashed!)).toBe(false);
  });

  it(`X6, K3: tether reap deletes a crashed runtime's pod and says so; a dead runtime that placed no pod costs no API call ${SUFFIX}`, async () => {
    const child = await startCrashChild(stateDir, placementOf());
    const [crashed] = podNames();
    child.process.kill('SIGKILL');
    await child.exited;
    const text = await execa(process.execPath, [MAIN, 'reap', '--state-dir', stateDir, '--grace', '300'], {
      reject: false,
    });
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stdout).toContain(`(pid ${child.pid}`);
    expect(text.stdout).toContain('1 pod deleted');
    expect(hasPod(crashed!)).toBe(false);

    const again = await startCrashChild(stateDir, placementOf());
    const [second] = podNames();
    again.process.kill('SIGKILL');
    await again.exited;
    const json = await execa(process.execPath, [MAIN, 'reap', '--state-dir', stateDir, '--json'], {
      reject: false,
    });
    expect(json.exitCode, json.stderr).toBe(0);
    const { reaped } = JSON.parse(json.stdout) as { reaped: { pid: number; pods: unknown[] }[] };
    expect(reaped).toEqual([
      expect.objectContaining({
        pid: again.pid,
        pods: [{ namespace: NS, name: second, owner: 'o1', error: null }],
      }),
    ]);
    expect(api.pods()).toEqual([]);

    const local = await startCrashChild(stateDir, null);
    local.process.kill('SIGKILL');
    await local.exited;
    const before = api.requests.length;
    const quiet = await execa(process.execPath, [MAIN, 'reap', '--state-dir', stateDir, '--json'], {
      reject: false,
    });
    expect(quiet.exitCode, quiet.stderr).toBe(0);
    expect(JSON.parse(quiet.stdout).reaped).toEqual([expect.objectContaining({ pid: local.pid, pods: [] })]);
    expect(api.requests.slice(before)).toEqual([]);
  });
});
