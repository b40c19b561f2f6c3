import { TetherError } from '../errors.js';
import { createExecProvider, type ExecProvider, type ExecTransportOptions } from './exec-provider.js';

/** {@link createKubernetesProvider}'s options. */
export interface KubernetesProviderOptions extends ExecTransportOptions {
  readonly namespace: string;
  /** A running pod; its container needs python3 ≥ 3.8. */
  readonly pod: string;
  /** The pod's container, when it has more than one. */
  readonly container?: string;
  /** A kubeconfig context other than the current one. */
  readonly context?: string;
  /** The kubeconfig file, when not kubectl's default (`$KUBECONFIG`, `~/.kube/config`). */
  readonly kubeconfig?: string;
  /** The kubectl executable. Default 'kubectl' on the PATH. */
  readonly kubectl?: string;
}

/**
 * The exec provider over `kubectl [--kubeconfig F] [--context X] exec -i -n NS POD [-c C] -- …` (X5): every tree
 * runs in the pod's container under the same helper as over SSH; no API client is involved.
 *
 * @example
 * ```ts
 * const provider = createKubernetesProvider({ namespace: 'agents', pod: 'agent-1', container: 'work' });
 * ```
 */
export function createKubernetesProvider(options: KubernetesProviderOptions): ExecProvider {
  const { namespace, pod, container, context, kubeconfig, kubectl, ...transport } = options;
  for (const [name, value] of [
    ['namespace', namespace],
    ['pod', pod],
  ] as const) {
    if (typeof value !== 'string' || value === '') {
      throw new TetherError('INVALID_ARGUMENT', `createKubernetesProvider: pass \`${name}\``);
    }
  }
  return createExecProvider({
    ...transport,
    argv: [
      kubectl ?? 'kubectl',
      ...(kubeconfig === undefined ? [] : ['--kubeconfig', kubeconfig]),
      ...(context === undefined ? [] : ['--context', context]),
      'exec',
      '-i',
      '-n',
      namespace,
      pod,
      ...(container === undefined ? [] : ['-c', container]),
      '--',
    ],
    label: `kubectl:${namespace}/${pod}${container === undefined ? '' : `/${container}`}`,
  });
}
