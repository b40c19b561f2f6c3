import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { removeContainerAsync, startContainer } from './container-image.js';
import { STAND_IN_PREFIX, writeKubectlStandIn } from './kubectl-stand-in.js';

/**
 * A stand-in Kubernetes API server for tests (no cluster can run here): node `http` on
 * 127.0.0.1, port 0, implementing only what Tether's pod placement and recovery call — create,
 * read, delete and list (label selector) of pods in a namespace — with Kubernetes' JSON shapes
 * and `Status` errors (401 without the kubeconfig's token, 403 in a forbidden namespace, 404,
 * 409 AlreadyExists, 422 Invalid). Each pod is backed by a real podman container of its
 * container's image (`<STAND_IN_PREFIX><ns>-<pod>`, hostname the pod's name, its hostPath volumes
 * mounted), reported `Running` and ready once `podman run` finished; a pod whose nodeSelector
 * matches no node (the one node is labelled `kubernetes.io/hostname: stand-in`) stays `Pending`,
 * unschedulable, as a scheduler would leave it. One container per pod.
 */
export interface KubeStandIn {
  readonly url: string;
  /** A kubeconfig (context `stand-in`, a bearer token) pointing at it over http. */
  readonly kubeconfig: string;
  /** The `kubectl` stand-in that execs into the pods' containers (kubectl-stand-in.ts). */
  readonly kubectl: string;
  /** Where the kubectl stand-in records each call's argv. */
  readonly dir: string;
  /** Every request, `METHOD path?query`, in order. */
  readonly requests: readonly string[];
  /** Creating pods in `namespace` is forbidden from now on (403, in RBAC's words). */
  forbid(namespace: string): void;
  /** Creates of pods in `namespace` get no answer from now on (a stalled API server). */
  stall(namespace: string): void;
  /** The pods stored now. */
  pods(): V1Pod[];
  /** The podman container backing pod `namespace/name`. */
  containerOf(namespace: string, name: string): string;
  /** Removes every container it started and stops listening. */
  close(): Promise<void>;
}

interface Stored {
  pod: V1Pod;
  readonly container: string;
  /** The `podman run` under way or done (resolves either way). */
  readonly started: Promise<void>;
}

const TOKEN = 'stand-in-token';
const USER = 'system:serviceaccount:default:tether';
const NODE_LABELS: Record<string, string> = {
  'kubernetes.io/hostname': 'stand-in',
  'kubernetes.io/os': 'linux',
};
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/**
 * Starts the stand-in; `close()` it in `afterAll`.
 *
 * @example
 * ```ts
 * const api = await startKubeStandIn();
 * rt.owners.host({ placement: { engine: 'kubernetes', namespace: 'agents', image, kubeconfig: api.kubeconfig, kubectl: api.kubectl } });
 * ```
 */
export async function startKubeStandIn(): Promise<KubeStandIn> {
  const dir = mkdtempSync(join(tmpdir(), 'kube-stand-in-'));
  const store = new Map<string, Stored>();
  const forbidden = new Set<string>();
  const stalled = new Set<string>();
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    handle(req, res).catch((err: unknown) => send(res, 500, status(500, 'InternalError', String(err))));
  });
  const containerOf = (ns: string, name: string) => `${STAND_IN_PREFIX}${ns}-${name}`;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.headers.authorization !== `Bearer ${TOKEN}`)
      return send(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods(?:\/([^/]+))?$/.exec(url.pathname);
    if (m === null)
      return send(res, 404, status(404, 'NotFound', `the server could not find the requested resource`));
    const [, ns = '', name] = m;
    if (stalled.has(ns) && req.method === 'POST') return; // no answer: close() ends the connection
    const key = (n: string) => `${ns}/${n}`;
    if (req.method === 'POST' && name === undefined) {
      const pod = JSON.parse(await body(req)) as V1Pod;
      const podName = pod.metadata?.name ?? '';
      if (forbidden.has(ns))
        return send(
          res,
          403,
          status(
            403,
            'Forbidden',
            `pods is forbidden: User "${USER}" cannot create resource "pods" in API group "" in the namespace "${ns}"`,
            podName,
          ),
        );
      const invalid = validate(pod, podName);
      if (invalid !== null)
        return send(res, 422, status(422, 'Invalid', `Pod "${podName}" is invalid: ${invalid}`, podName));
      if (store.has(key(podName)))
        return send(res, 409, status(409, 'AlreadyExists', `pods "${podName}" already exists`, podName));
      const stored = admit(ns, pod);
      store.set(key(podName), stored);
      return send(res, 201, stored.pod);
    }
    if (req.method === 'GET' && name === undefined) {
      const selector = url.searchParams.get('labelSelector');
      const items = [...store.values()]
        .map((s) => s.pod)
        .filter((p) => p.metadata?.namespace === ns && matches(p.metadata?.labels ?? {}, selector));
      return send(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items });
    }
    const found = name === undefined ? undefined : store.get(key(name));
    if (found === undefined || name === undefined)
      return send(res, 404, status(404, 'NotFound', `pods "${name}" not found`, name));
    if (req.method === 'GET') return send(res, 200, found.pod);
    if (req.method === 'DELETE') {
      store.delete(key(name));
      await found.started;
      await removeContainerAsync(found.container);
      return send(res, 200, found.pod);
    }
    return send(
      res,
      405,
      status(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`),
    );
  }

  // Stores the pod Pending and starts its container (unless no node fits its nodeSelector).
  function admit(ns: string, pod: V1Pod): Stored {
    const name = pod.metadata?.name ?? '';
    const main = pod.spec?.containers[0] as V1Container;
    const now = new Date().toISOString();
    const entry: Stored = {
      container: containerOf(ns, name),
      started: Promise.resolve(),
      pod: {
        ...pod,
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          ...pod.metadata,
          namespace: ns,
          uid: randomUUID(),
          resourceVersion: '1',
          creationTimestamp: now as never,
        },
        status: { phase: 'Pending', qosClass: 'BestEffort' },
      },
    };
    const selector = pod.spec?.nodeSelector ?? {};
    if (!Object.entries(selector).every(([k, v]) => NODE_LABELS[k] === v)) {
      entry.pod.status = {
        phase: 'Pending',
        conditions: [
          {
            type: 'PodScheduled',
            status: 'False',
            reason: 'Unschedulable',
            message:
              "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
            lastTransitionTime: now as never,
          },
        ],
      };
      return entry;
    }
    const waiting = (reason: string, message?: string) => ({
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: now as never }],
      containerStatuses: [
        {
          name: main.name,
          image: main.image ?? '',
          imageID: '',
          ready: false,
          restartCount: 0,
          started: false,
          state: { waiting: { reason, ...(message ? { message } : {}) } },
        },
      ],
    });
    entry.pod.status = waiting('ContainerCreating');
    const volumes = new Map((pod.spec?.volumes ?? []).map((v) => [v.name, v.hostPath?.path]));
    const args = ['--hostname', name];
    for (const m of main.volumeMounts ?? []) {
      const host = volumes.get(m.name);
      if (host !== undefined) args.push('-v', `${host}:${m.mountPath}${m.readOnly ? ':ro' : ''}`);
    }
    for (const e of main.env ?? []) if (e.value !== undefined) args.push('-e', `${e.name}=${e.value}`);
    if (main.workingDir) args.push('-w', main.workingDir);
    const command = [...(main.command ?? []), ...(main.args ?? [])];
    return {
      ...entry,
      started: startContainer({
        name: entry.container,
        image: main.image ?? '',
        labels: [`tether-test-pod=${ns}.${name}`],
        args,
        command,
      }).then(
        (id) => {
          entry.pod.status = {
            phase: 'Running',
            hostIP: '127.0.0.1',
            podIP: '10.88.0.2',
            startTime: now as never,
            conditions: ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({
              type,
              status: 'True',
              lastTransitionTime: now as never,
            })),
            containerStatuses: [
              {
                name: main.name,
                image: main.image ?? '',
                imageID: '',
                containerID: `podman://${id}`,
                ready: true,
                started: true,
                restartCount: 0,
                state: { running: { startedAt: new Date().toISOString() as never } },
              },
            ],
          };
        },
        (err: Error) => {
          entry.pod.status = waiting('ErrImagePull', err.message);
        },
      ),
    };
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const kubeconfig = join(dir, 'kubeconfig');
  // JSON is YAML: the client reads it as a kubeconfig.
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'stand-in', cluster: { server: url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'tester', user: { token: TOKEN } }],
      contexts: [
        { name: 'stand-in', context: { cluster: 'stand-in', user: 'tester', namespace: 'default' } },
      ],
      'current-context': 'stand-in',
    }),
  );
  return {
    url,
    kubeconfig,
    kubectl: writeKubectlStandIn(dir, 'stand-in'),
    dir,
    requests,
    forbid: (namespace) => forbidden.add(namespace),
    stall: (namespace) => stalled.add(namespace),
    pods: () => [...store.values()].map((s) => s.pod),
    containerOf,
    async close() {
      const all = [...store.values()];
      store.clear();
      await Promise.all(
        all.map(async (s) => {
          await s.started;
          await removeContainerAsync(s.container);
        }),
      );
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function validate(pod: V1Pod, name: string): string | null {
  if (!DNS_SUBDOMAIN.test(name))
    return `metadata.name: Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`;
  const containers = pod.spec?.containers ?? [];
  if (containers.length !== 1)
    return `spec.containers: the stand-in API server runs exactly one container per pod, got ${containers.length}`;
  if (!containers[0]?.image) return 'spec.containers[0].image: Required value';
  return null;
}

// Equality (`k=v`, `k==v`), inequality (`k!=v`), existence (`k`, `!k`), comma-separated (all must hold).
function matches(labels: Record<string, string>, selector: string | null): boolean {
  if (selector === null || selector === '') return true;
  return selector.split(',').every((term) => {
    const ne = /^([^!=]+)!=(.*)$/.exec(term);
    if (ne) return labels[ne[1]!] !== ne[2];
    const eq = /^([^!=]+)==?(.*)$/.exec(term);
    if (eq) return labels[eq[1]!] === eq[2];
    if (term.startsWith('!')) return !(term.slice(1) in labels);
    return term in labels;
  });
}

function status(code: number, reason: string, message: string, name?: string) {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(name === undefined ? {} : { details: { name, kind: 'pods' } }),
    code,
  };
}

function send(res: ServerResponse, code: number, value: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

function body(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      text += chunk;
    });
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}
