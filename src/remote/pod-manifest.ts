import type { V1Container, V1Pod } from '@kubernetes/client-node';

/** What of a pod manifest the runtime decides: its name, namespace, labels and trees' container. */
export interface PodManifestParts {
  readonly name: string;
  readonly namespace: string;
  /** The origin labels (podLabels): they win over the template's labels of the same key. */
  readonly labels: Readonly<Record<string, string>>;
  /** The container the owner's trees run in. */
  readonly container: string;
  /** Its image, when given (else the template's). */
  readonly image: string | undefined;
}

/**
 * The Pod to create for one owner (X6), from the placement's template: the template's labels,
 * annotations and spec are kept; the name, namespace and origin labels are the runtime's; the
 * trees' container is the template's of that name (its image replaced when one is given) or a
 * new one, and runs `sleep infinity` unless the template gives it a command or args.
 * `restartPolicy` is `Never` unless the template says otherwise.
 *
 * @example
 * ```ts
 * const body = podManifest(template, { name: 'tether-812-9031-1-o1', namespace: 'agents', labels, container: 'tether', image: 'agent:1' });
 * ```
 */
export function podManifest(template: V1Pod | undefined, parts: PodManifestParts): V1Pod {
  const spec = template?.spec;
  const containers = spec?.containers ?? [];
  const given = containers.find((c) => c.name === parts.container);
  const main: V1Container = {
    ...given,
    name: parts.container,
    ...(parts.image === undefined ? {} : { image: parts.image }),
    ...(given?.command === undefined && given?.args === undefined ? { command: ['sleep', 'infinity'] } : {}),
  };
  const meta = template?.metadata;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: parts.name,
      namespace: parts.namespace,
      labels: { ...meta?.labels, ...parts.labels },
      ...(meta?.annotations === undefined ? {} : { annotations: meta.annotations }),
    },
    spec: {
      restartPolicy: 'Never',
      ...spec,
      containers: given ? containers.map((c) => (c === given ? main : c)) : [...containers, main],
    },
  };
}

/** Where a pod is on its way to running the owner's trees. */
export type PodProgress =
  | { readonly state: 'ready' }
  /** It will not get there: the pod failed or ended, or its container cannot be created. */
  | { readonly state: 'failed'; readonly why: string }
  /** Not yet: why not, in the API's words (unscheduled, pulling, creating). */
  | { readonly state: 'waiting'; readonly why: string };

// Waiting reasons the kubelet does not retry its way out of.
const FATAL = new Set(['InvalidImageName', 'ErrImageNeverPull', 'CreateContainerConfigError']);

/**
 * Judges a pod as read from the API: ready once it is `Running` and `container` is running and
 * ready; failed when the pod failed or ended, the container terminated, or it waits for a reason
 * the kubelet does not retry out of; else waiting, with the pod's own reason.
 *
 * @example
 * ```ts
 * const p = podProgress(await api.readNamespacedPod({ name, namespace }), 'tether');
 * if (p.state === 'failed') throw new Error(p.why);
 * ```
 */
export function podProgress(pod: V1Pod, container: string): PodProgress {
  const status = pod.status;
  const phase = status?.phase ?? 'Pending';
  const own = status?.containerStatuses?.find((c) => c.name === container);
  const said = (reason?: string, message?: string) => [reason, message].filter(Boolean).join(': ');
  if (phase === 'Failed' || phase === 'Succeeded')
    return {
      state: 'failed',
      why: `the pod is ${phase}${status?.reason ? `: ${said(status.reason, status.message)}` : ''}`,
    };
  const ended = own?.state?.terminated;
  if (ended)
    return {
      state: 'failed',
      why: `container ${container} terminated: ${said(ended.reason, ended.message) || `exit ${ended.exitCode}`}`,
    };
  const waiting = own?.state?.waiting;
  if (waiting?.reason !== undefined && FATAL.has(waiting.reason))
    return { state: 'failed', why: `container ${container}: ${said(waiting.reason, waiting.message)}` };
  if (phase === 'Running' && own?.ready === true && own.state?.running !== undefined)
    return { state: 'ready' };
  const unscheduled = status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
  const why =
    (waiting && `container ${container}: ${said(waiting.reason, waiting.message)}`) ||
    (unscheduled && `not scheduled: ${said(unscheduled.reason, unscheduled.message)}`) ||
    `the pod is ${phase}${status?.reason ? `: ${said(status.reason, status.message)}` : ''}`;
  return { state: 'waiting', why };
}
