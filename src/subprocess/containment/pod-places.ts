import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { PodPlace } from './kube-api.js';
import { writeSyncedJson } from './ledger.js';

/** The folder of the state directory where each runtime that placed pods lists where (X6, K3). */
export const POD_PLACES = 'pods';

/**
 * The places (API server and namespace) a runtime put pods in, recorded before each new one is
 * used: `<stateDir>/pods/<runtime id>.json`, synced, private like the ledger (state-trust.ts
 * checks it). Recovery contacts an API server only for a dead runtime that has such a file.
 *
 * @example
 * ```ts
 * const places = openPodPlaces(stateDir, runtimeId);
 * places.record({ namespace: 'agents', kubeconfig: null, context: null }); // before the first pod there
 * places.close(); // every pod deleted
 * ```
 */
export interface PodPlaces {
  /** Adds `place` to the runtime's file (written and synced only when it is new). */
  record(place: PodPlace): void;
  /** Removes the file (the runtime ended with its pods deleted). */
  close(): void;
}

/**
 * Opens runtime `runtimeId`'s record of pod places in `stateDir` (nothing is written until the
 * first place).
 *
 * @example
 * ```ts
 * const places = openPodPlaces('/tmp/tether-state-0', '812-9031-1');
 * ```
 */
export function openPodPlaces(stateDir: string, runtimeId: string): PodPlaces {
  const known: PodPlace[] = [];
  let file: string | null = null;
  return {
    record(place) {
      const clean = { namespace: place.namespace, kubeconfig: place.kubeconfig, context: place.context };
      if (known.some((p) => samePlace(p, clean))) return;
      known.push(clean);
      file = writeSyncedJson(join(stateDir, POD_PLACES), `${runtimeId}.json`, known);
    },
    close() {
      if (file !== null) rmSync(file, { force: true });
    },
  };
}

/**
 * The places a (dead) runtime recorded, each checked to be a place and nothing else; `[]` when it
 * placed no pod. A file that does not parse as places is a `TETHER_RECOVERY` warning, never
 * guessed at.
 *
 * @example
 * ```ts
 * for (const place of readPodPlaces(stateDir, record.runtimeId)) await removePodsIn(place, record);
 * ```
 */
export function readPodPlaces(stateDir: string, runtimeId: string): PodPlace[] {
  const file = join(stateDir, POD_PLACES, `${runtimeId}.json`);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  try {
    const value = JSON.parse(text) as unknown;
    if (Array.isArray(value) && value.every(isPlace)) return value;
  } catch {}
  process.emitWarning(`tether: ${file} does not list pod places; its pods (if any) are left alone`, {
    code: 'TETHER_RECOVERY',
  });
  return [];
}

/**
 * Removes a dead runtime's record of pod places (once its pods were deleted).
 *
 * @example
 * ```ts
 * removePodPlaces(stateDir, record.runtimeId);
 * ```
 */
export function removePodPlaces(stateDir: string, runtimeId: string): void {
  rmSync(join(stateDir, POD_PLACES, `${runtimeId}.json`), { force: true });
}

const samePlace = (a: PodPlace, b: PodPlace) =>
  a.namespace === b.namespace && a.kubeconfig === b.kubeconfig && a.context === b.context;

// A DNS-1123 label namespace; a kubeconfig and context each a non-empty string or null.
function isPlace(value: unknown): value is PodPlace {
  if (typeof value !== 'object' || value === null) return false;
  const p = value as Record<string, unknown>;
  const optional = (v: unknown) => v === null || (typeof v === 'string' && v !== '');
  return (
    typeof p.namespace === 'string' &&
    /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(p.namespace) &&
    optional(p.kubeconfig) &&
    optional(p.context)
  );
}
