import { isSameLiveProcess } from '../identity.js';
import { originOf, processOf, RUNTIME_LABEL } from './container-labels.js';
import { apiCode, apiMessage, boundedSignal, coreApi, type PodPlace } from './kube-api.js';
import { readPodPlaces } from './pod-places.js';

/**
 * One pod of a dead runtime that recovery deleted, or tried to (X6, K3).
 *
 * @example
 * ```ts
 * for (const p of rt.recovered.flatMap((r) => r.pods)) console.log(p.namespace, p.name, p.error ?? 'deleted');
 * ```
 */
export interface RecoveredPod {
  readonly namespace: string;
  readonly name: string;
  /** The owner it was placed for (its registry key, `o1`). */
  readonly owner: string;
  /** `null` when deleted; else the API's own error (the pod is still there). */
  readonly error: string | null;
}

/** The runtime whose pods are deleted: its ledger record's id and process. */
export interface DeadRuntime {
  readonly runtimeId: string;
  readonly pid: number;
  readonly startTime: number | null;
}

/**
 * Deletes the pods of one dead runtime (X6, K3), in each place it recorded before placing a pod
 * there (pod-places.ts; none recorded: no API server is contacted): one list per place by the
 * `tether.runtime=<id>` label selector, then a delete (grace 0) of each pod whose labels name
 * the same process, dead now. Every other pod is left alone. A place whose API cannot be reached
 * (or does not answer within 15 s) is a `TETHER_RECOVERY` warning; its pods stay where they are.
 *
 * @example
 * ```ts
 * const pods = await removePodsOf(stateDir, record);
 * ```
 */
export async function removePodsOf(stateDir: string, runtime: DeadRuntime): Promise<RecoveredPod[]> {
  const lists = await Promise.all(
    readPodPlaces(stateDir, runtime.runtimeId).map((p) => removeIn(p, runtime)),
  );
  return lists.flat();
}

/** Bound on one place's list and deletes: an API server that does not answer must not hold a start. */
const API_TIMEOUT_MS = 15_000;

async function removeIn(place: PodPlace, runtime: DeadRuntime): Promise<RecoveredPod[]> {
  const { namespace } = place;
  const bound = boundedSignal(API_TIMEOUT_MS);
  try {
    const api = await coreApi(place, bound.signal);
    const list = await api.listNamespacedPod({
      namespace,
      labelSelector: `${RUNTIME_LABEL}=${runtime.runtimeId}`,
    });
    const theirs = list.items.flatMap((pod) => {
      const name = pod.metadata?.name;
      const origin = originOf(pod.metadata?.labels ?? {});
      const same =
        origin !== null &&
        origin.runtimeId === runtime.runtimeId &&
        origin.pid === runtime.pid &&
        origin.startTime === runtime.startTime &&
        !isSameLiveProcess(processOf(origin));
      return name !== undefined && same ? [{ name, owner: origin.owner }] : [];
    });
    return await Promise.all(
      theirs.map(async ({ name, owner }): Promise<RecoveredPod> => {
        try {
          await api.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
          return { namespace, name, owner, error: null };
        } catch (err) {
          return { namespace, name, owner, error: apiCode(err) === 404 ? null : apiMessage(err) };
        }
      }),
    );
  } catch (err) {
    process.emitWarning(
      `tether: listing the pods of dead runtime ${runtime.runtimeId} in namespace ${namespace} failed: ${apiMessage(err)}`,
      { code: 'TETHER_RECOVERY' },
    );
    return [];
  } finally {
    bound.clear();
  }
}
