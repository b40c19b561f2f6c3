import { setTimeout as sleep } from 'node:timers/promises';
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { TetherError } from '../errors.js';
import { type ContainerOrigin, podLabels } from '../subprocess/containment/container-labels.js';
import {
  apiCode,
  apiMessage,
  boundedSignal,
  coreApi,
  type PodPlace,
} from '../subprocess/containment/kube-api.js';
import type { ExecTransportOptions } from './exec-provider.js';
import { createKubernetesProvider } from './kubernetes-provider.js';
import { type PlacedOwner, placedOwner, placementChecks } from './placed-owner.js';
import { type PodProgress, podManifest, podProgress } from './pod-manifest.js';

/**
 * X6: an owner placed in a Kubernetes pod of its own — `owners.host({ placement })`,
 * `agents.create({ placement })`. The runtime creates the pod through the API
 * (`@kubernetes/client-node`, labelled with the runtime's process and the owner), waits until
 * its container runs and is ready, runs every tree of the owner in it through the remote helper
 * over `kubectl exec -i` (X5), and deletes it (grace 0) once the owner's trees are verified dead.
 * The image needs python3 ≥ 3.8 and `sleep`.
 *
 * @example
 * ```ts
 * const lease = rt.owners.host({
 *   placement: { engine: 'kubernetes', namespace: 'agents', image: 'registry.example/agent:1', context: 'prod' },
 *   sandbox: { mode: 'off' },
 * });
 * ```
 */
export interface PodPlacement {
  readonly engine: 'kubernetes';
  readonly namespace: string;
  /** The image of the trees' container; may be left out when `pod` gives that container one. */
  readonly image?: string;
  /**
   * A Pod manifest to start from: its labels, annotations and spec (resources, volumes, node
   * selector, service account, security context, more containers) are kept; its name and
   * namespace are the runtime's.
   */
  readonly pod?: V1Pod;
  /** The container the trees run in: one of `pod`'s or a new one. Default `pod`'s first, else `tether`. */
  readonly container?: string;
  /** A kubeconfig context other than the current one (for the API calls and for kubectl). */
  readonly context?: string;
  /** One kubeconfig file, when not the default (`$KUBECONFIG`, `~/.kube/config`). */
  readonly kubeconfig?: string;
  /** The kubectl executable. Default 'kubectl' on the PATH. */
  readonly kubectl?: string;
  /** Bound on the create and the wait until ready (an image pull, scheduling). Default 120000 ms. */
  readonly startTimeoutMs?: number;
  /** The exec transport's options (heartbeat, reconnect, linger), as for `createKubernetesProvider`. */
  readonly exec?: ExecTransportOptions;
}

/**
 * The provider of one owner placed in a pod: its pod's, made and ended with the owner.
 *
 * @example
 * ```ts
 * const placed = placeInPod(placement, origin, record);
 * console.log(placed.label); // 'kubernetes:agents/tether-812-9031-1-o1'
 * ```
 */
export interface PlacedPod extends PlacedOwner {
  readonly namespace: string;
  /** The pod's name (`tether-<runtime id>-<owner>`, a DNS-1123 label). */
  readonly pod: string;
}

const POLL_MS = 250;
const REMOVE_TIMEOUT_MS = 30_000;

/**
 * Creates the pod of one owner now (in the background: `owners.host` is synchronous) and returns
 * the provider that runs its trees there. `record` is told the API server and namespace first
 * (before the pod can exist: recovery finds it there after a crash). A pod the API refuses, that
 * fails, or that is not ready within `startTimeoutMs` makes every spawn reject
 * PROVIDER_UNAVAILABLE with the API's message or the pod's own reason; nothing starts anywhere
 * else. Options are checked first (INVALID_ARGUMENT naming the field, nothing created).
 *
 * @example
 * ```ts
 * const placed = placeInPod({ engine: 'kubernetes', namespace: 'agents', image: 'agent:1' }, origin, (p) => places.record(p));
 * await placed.dispose(); // after its trees are dead: the pod is deleted
 * ```
 */
export function placeInPod(
  options: PodPlacement,
  origin: ContainerOrigin,
  record: (place: PodPlace) => void,
): PlacedPod {
  assertPodPlacement(options, 'placement');
  const { namespace } = options;
  const pod = podName(`tether-${origin.runtimeId}-${origin.owner}`);
  const container = options.container ?? options.pod?.spec?.containers?.[0]?.name ?? 'tether';
  const place: PodPlace = {
    namespace,
    kubeconfig: options.kubeconfig ?? (process.env.KUBECONFIG || null),
    context: options.context ?? null,
  };
  record(place);
  const inner = createKubernetesProvider({
    ...options.exec,
    namespace,
    pod,
    container,
    ...(options.context === undefined ? {} : { context: options.context }),
    ...(options.kubeconfig === undefined ? {} : { kubeconfig: options.kubeconfig }),
    ...(options.kubectl === undefined ? {} : { kubectl: options.kubectl }),
  });
  const body = podManifest(options.pod, {
    name: pod,
    namespace,
    labels: podLabels(origin),
    container,
    image: options.image,
  });
  const lifetime = new AbortController();
  const unavailable = (why: string) =>
    new TetherError(
      'PROVIDER_UNAVAILABLE',
      `kubernetes could not start pod ${namespace}/${pod} for this owner: ${why}; nothing of the owner runs elsewhere`,
    );
  let created = false;
  const start = async () => {
    const ms = options.startTimeoutMs ?? 120_000;
    // Every request and wait of the start ends at its deadline or when the owner ends.
    const bound = boundedSignal(ms, lifetime.signal);
    const stopped = (last: string) =>
      lifetime.signal.aborted
        ? unavailable('the owner ended while it was starting')
        : unavailable(`not ready within ${ms} ms (${last})`);
    try {
      let api: CoreV1Api;
      try {
        api = await coreApi(place, bound.signal);
      } catch (err) {
        throw unavailable(`the kubeconfig cannot be used: ${apiMessage(err)}`);
      }
      if (bound.signal.aborted) throw stopped('it was not created');
      await api.createNamespacedPod({ namespace, body }).then(
        () => {
          created = true;
        },
        (err: unknown) => {
          // A create that got no answer may have been done; one refused (409 included) was not.
          created = apiCode(err) === null;
          if (bound.signal.aborted) throw stopped(`creating it: ${apiMessage(err)}`);
          throw unavailable(`creating it failed: ${apiMessage(err)}`);
        },
      );
      let last = 'created';
      for (;;) {
        // A read the server could not answer (no answer, 5xx) is tried again until the deadline.
        const read = await api.readNamespacedPod({ name: pod, namespace }).catch((err: unknown) => {
          if (bound.signal.aborted) throw stopped(last);
          const code = apiCode(err);
          if (code !== null && code < 500) throw unavailable(`reading it failed: ${apiMessage(err)}`);
          return `reading it failed: ${apiMessage(err)}`;
        });
        const progress: PodProgress =
          typeof read === 'string' ? { state: 'waiting', why: read } : podProgress(read, container);
        if (progress.state === 'ready') return;
        if (progress.state === 'failed') throw unavailable(progress.why);
        last = progress.why;
        await sleep(POLL_MS, undefined, { signal: bound.signal }).catch(() => {
          throw stopped(last);
        });
      }
    } finally {
      bound.clear();
    }
  };
  // Also after a failed start: a pod that never became ready is deleted too.
  const remove = async () => {
    if (!created) return;
    const bound = boundedSignal(REMOVE_TIMEOUT_MS);
    try {
      const api = await coreApi(place, bound.signal);
      await api.deleteNamespacedPod({ name: pod, namespace, gracePeriodSeconds: 0 });
    } catch (err) {
      if (apiCode(err) === 404) return;
      process.emitWarning(`tether: deleting pod ${namespace}/${pod} failed: ${apiMessage(err)}`, {
        code: 'TETHER_PROVIDER',
      });
    } finally {
      bound.clear();
    }
  };
  const placed = placedOwner({
    name: 'pod',
    label: `kubernetes:${namespace}/${pod}`,
    started: start(),
    inner,
    remove,
    cancelStart: () => lifetime.abort(),
  });
  return Object.assign(placed, { namespace, pod });
}

/**
 * Throws INVALID_ARGUMENT naming the field unless `value` is a {@link PodPlacement}.
 *
 * @example
 * ```ts
 * assertPodPlacement({ engine: 'kubernetes', namespace: 'agents', image: 'agent:1' }, 'owners.host options.placement');
 * ```
 */
export function assertPodPlacement(value: unknown, what: string): asserts value is PodPlacement {
  const check = placementChecks(value, what);
  const { p, fail } = check;
  if (p.engine !== 'kubernetes') fail(`engine must be 'kubernetes', got ${String(p.engine)}`);
  if (typeof p.namespace !== 'string' || !DNS_LABEL.test(p.namespace))
    fail(
      `namespace must be a DNS-1123 label (a-z, 0-9, '-', at most 63), got ${JSON.stringify(p.namespace)}`,
    );
  check.strings(['image', 'container', 'context', 'kubeconfig', 'kubectl']);
  const template = p.pod as V1Pod | undefined;
  if (template !== undefined) {
    if (typeof template !== 'object' || template === null) fail('pod must be a Pod manifest (an object)');
    const containers = template.spec?.containers;
    if (
      containers !== undefined &&
      !(Array.isArray(containers) && containers.every((c) => typeof c?.name === 'string'))
    )
      fail('pod.spec.containers must be an array of containers, each with a name');
  }
  const name = (p.container as string | undefined) ?? template?.spec?.containers?.[0]?.name ?? 'tether';
  if (!DNS_LABEL.test(name)) fail(`container must be a DNS-1123 label, got ${JSON.stringify(name)}`);
  const given = template?.spec?.containers?.find((c) => c.name === name);
  if (p.image === undefined && !given?.image)
    fail(`image must be a non-empty string (or pod.spec.containers must give container ${name} an image)`);
  const exec = check.common();
  // The exec transport's own checks (a provider made and dropped: it starts nothing until used).
  createKubernetesProvider({ ...exec, namespace: 'check', pod: 'check' });
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

// `tether-812-9031-1-o1` as a DNS-1123 label: lower case, [a-z0-9-], at most 63, alphanumeric ends.
function podName(wanted: string): string {
  return wanted
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 63)
    .replace(/^-+|-+$/g, '');
}
