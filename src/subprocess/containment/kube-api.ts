import { delimiter } from 'node:path';
import type { CoreV1Api } from '@kubernetes/client-node';

/**
 * Which Kubernetes API server and namespace the pods of a placement live in (X6): what a
 * runtime records before its first pod there, so that recovery finds that pod after a crash.
 *
 * @example
 * ```ts
 * const place: PodPlace = { namespace: 'agents', kubeconfig: '/home/me/.kube/config', context: 'prod' };
 * ```
 */
export interface PodPlace {
  readonly namespace: string;
  /** The kubeconfig file(s) (`KUBECONFIG`'s list form too), or `null` for the client's default lookup. */
  readonly kubeconfig: string | null;
  /** A context other than the kubeconfig's current one, or `null`. */
  readonly context: string | null;
}

/**
 * A `CoreV1Api` of `@kubernetes/client-node` for `place`, the client loaded on first use (a
 * runtime that never places a pod never loads it). Every request it makes ends when `signal`
 * aborts (the caller's bound: an API server that does not answer must not hold a start, a
 * removal or a recovery). Throws what the client throws for a kubeconfig that cannot be read or
 * names no such context.
 *
 * @example
 * ```ts
 * const api = await coreApi({ namespace: 'agents', kubeconfig: null, context: 'kind-dev' }, AbortSignal.timeout(15_000));
 * await api.listNamespacedPod({ namespace: 'agents', labelSelector: 'tether.runtime' });
 * ```
 */
export async function coreApi(place: PodPlace, signal?: AbortSignal): Promise<CoreV1Api> {
  const k8s = await import('@kubernetes/client-node');
  const config = new k8s.KubeConfig();
  if (place.kubeconfig === null) config.loadFromDefault();
  else {
    // KUBECONFIG's list form too, merged as the client's own loadFromDefault merges it.
    const [first = '', ...more] = place.kubeconfig.split(delimiter).filter((f) => f !== '');
    config.loadFromFile(first);
    for (const file of more) {
      const next = new k8s.KubeConfig();
      next.loadFromFile(file);
      config.mergeConfig(next);
    }
  }
  if (place.context !== null) {
    if (config.getContextObject(place.context) === null)
      throw new Error(`the kubeconfig has no context ${JSON.stringify(place.context)}`);
    config.setCurrentContext(place.context);
  }
  const cluster = config.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig names no cluster for its current context');
  // What makeApiClient builds, and a middleware that gives every request the caller's signal.
  return new k8s.CoreV1Api(
    k8s.createConfiguration({
      baseServer: new k8s.ServerConfiguration(cluster.server, {}),
      authMethods: { default: config },
      promiseMiddleware: [
        {
          pre: async (request) => {
            if (signal !== undefined) request.setSignal(signal);
            return request;
          },
          post: async (response) => response,
        },
      ],
    }),
  );
}

/**
 * An abort signal that fires after `ms` or when `outer` aborts, and its `clear` (the timer's
 * owner clears it once the work it bounds has settled).
 *
 * @example
 * ```ts
 * const bound = boundedSignal(15_000);
 * try { await work(bound.signal); } finally { bound.clear(); }
 * ```
 */
export function boundedSignal(ms: number, outer?: AbortSignal): { signal: AbortSignal; clear(): void } {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(new Error(`no answer within ${ms} ms`)), ms);
  return {
    signal: outer === undefined ? timeout.signal : AbortSignal.any([outer, timeout.signal]),
    clear: () => clearTimeout(timer),
  };
}

/**
 * The API's own words for a failed call: the `message` of the Kubernetes `Status` it answered
 * with (`pods "x" is forbidden: …`), its HTTP code; else the error's message (a refused
 * connection, a bad kubeconfig).
 *
 * @example
 * ```ts
 * api.createNamespacedPod({ namespace, body }).catch((err) => { throw new Error(apiMessage(err)); });
 * ```
 */
export function apiMessage(err: unknown): string {
  if (typeof err !== 'object' || err === null) return String(err);
  const e = err as { code?: unknown; body?: unknown; message?: unknown };
  if (typeof e.code === 'number' && 'body' in e) {
    const status = parseStatus(e.body);
    const words = status?.message ?? (typeof e.body === 'string' && e.body !== '' ? e.body : null);
    return `HTTP ${e.code}${status?.reason ? ` ${status.reason}` : ''}: ${words ?? '(no message)'}`;
  }
  return typeof e.message === 'string' ? e.message : String(err);
}

/**
 * The HTTP code of a failed API call, or `null` when it did not reach the server.
 *
 * @example
 * ```ts
 * if (apiCode(err) === 404) return; // gone already
 * ```
 */
export function apiCode(err: unknown): number | null {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : null;
}

function parseStatus(body: unknown): { message?: string; reason?: string } | null {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      return null;
    }
  }
  if (typeof value !== 'object' || value === null) return null;
  const { message, reason } = value as Record<string, unknown>;
  return {
    ...(typeof message === 'string' ? { message } : {}),
    ...(typeof reason === 'string' ? { reason } : {}),
  };
}
