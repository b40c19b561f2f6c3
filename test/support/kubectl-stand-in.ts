import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A `kubectl` stand-in (no cluster can run here): `kubectl [--kubeconfig F] [--context C] exec -i
 * -n NS POD [-c C] -- argv…` becomes `podman exec -i <container> argv…`, where the container is
 * the pod's name itself (`containerOf: 'pod'`: a container standing in for a pod) or the one the
 * stand-in API server backs the pod with (`containerOf: 'stand-in'`, kube-stand-in.ts). Any other
 * form exits 64. Each call's argv is written (NUL-separated) to `<dir>/argv.<pid>`.
 *
 * @example
 * ```ts
 * const kubectl = writeKubectlStandIn(dir, 'pod');
 * const provider = createKubernetesProvider({ namespace: 'agents', pod: container, kubectl });
 * ```
 */
export function writeKubectlStandIn(dir: string, containerOf: 'pod' | 'stand-in'): string {
  const file = join(dir, 'kubectl');
  const container = containerOf === 'pod' ? '"$pod"' : `"$(printf '${STAND_IN_PREFIX}%s-%s' "$ns" "$pod")"`;
  writeFileSync(
    file,
    `#!/bin/bash
printf '%s\\0' "$@" > ${join(dir, 'argv')}.$$
while [ "$1" = --kubeconfig ] || [ "$1" = --context ]; do shift 2; done
[ "$1 $2 $3" = "exec -i -n" ] || { echo "kubectl stand-in: unsupported: $*" >&2; exit 64; }
ns=$4; pod=$5; shift 5
if [ "$1" = -c ]; then shift 2; fi
[ "$1" = -- ] || { echo "kubectl stand-in: expected -- before the command" >&2; exit 64; }
shift
exec podman exec -i ${container} "$@"
`,
  );
  chmodSync(file, 0o755);
  return file;
}

/** The podman container backing pod NS/POD of the stand-in API server: `<prefix><ns>-<pod>`. */
export const STAND_IN_PREFIX = 'tether-kpod-';

/**
 * The argv of each `kubectl` call recorded in `dir`, in no particular order.
 *
 * @example
 * ```ts
 * const [argv] = kubectlCalls(dir);
 * ```
 */
export function kubectlCalls(dir: string): string[][] {
  return readdirSync(dir)
    .filter((f) => f.startsWith('argv.'))
    .map((f) => readFileSync(join(dir, f), 'utf8').split('\0').slice(0, -1));
}
