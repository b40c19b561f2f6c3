import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { podManifest, podProgress } from '../../src/remote/pod-manifest.js';

// X6 without any server: the Pod Tether asks for, and how it reads the status a cluster reports.
const parts = {
  name: 'tether-812-9031-1-o1',
  namespace: 'agents',
  labels: { 'tether.runtime': '812-9031-1', 'tether.owner': 'o1' },
  container: 'tether',
  image: 'agent:1' as string | undefined,
};

describe('pod manifest (X6)', () => {
  it('X6: without a template, one container `tether` of the image runs `sleep infinity`, restartPolicy Never, the origin labels', () => {
    expect(podManifest(undefined, parts)).toEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: parts.name, namespace: 'agents', labels: parts.labels },
      spec: {
        restartPolicy: 'Never',
        containers: [{ name: 'tether', image: 'agent:1', command: ['sleep', 'infinity'] }],
      },
    });
  });

  it("X6: a template's spec, labels and annotations are kept; its name and namespace are not; origin labels win; its command is kept", () => {
    const template: V1Pod = {
      metadata: {
        name: 'mine',
        namespace: 'elsewhere',
        labels: { team: 'a', 'tether.owner': 'forged' },
        annotations: { note: 'x' },
      },
      spec: {
        restartPolicy: 'OnFailure',
        serviceAccountName: 'agent',
        containers: [
          { name: 'sidecar', image: 'proxy:1' },
          { name: 'tether', image: 'old:0', command: ['/init'], resources: { limits: { cpu: '1' } } },
        ],
      },
    };
    const pod = podManifest(template, parts);
    expect(pod.metadata).toEqual({
      name: parts.name,
      namespace: 'agents',
      labels: { team: 'a', ...parts.labels },
      annotations: { note: 'x' },
    });
    expect(pod.spec).toEqual({
      restartPolicy: 'OnFailure',
      serviceAccountName: 'agent',
      containers: [
        { name: 'sidecar', image: 'proxy:1' },
        { name: 'tether', image: 'agent:1', command: ['/init'], resources: { limits: { cpu: '1' } } },
      ],
    });
    expect(template.spec?.containers[1]?.image).toBe('old:0'); // the template is not changed
    // No image given: the template's stays.
    expect(podManifest(template, { ...parts, image: undefined }).spec?.containers[1]?.image).toBe('old:0');
  });

  it("X6: a pod is ready only when Running with the trees' container running and ready; failures and waits say the pod's own reason", () => {
    const running = (ready: boolean): V1Pod => ({
      status: {
        phase: 'Running',
        containerStatuses: [
          { name: 'tether', image: 'a', imageID: '', ready, restartCount: 0, state: { running: {} } },
        ],
      },
    });
    expect(podProgress(running(true), 'tether')).toEqual({ state: 'ready' });
    expect(podProgress(running(true), 'other').state).toBe('waiting');
    expect(podProgress(running(false), 'tether')).toEqual({ state: 'waiting', why: 'the pod is Running' });
    const waiting = (reason: string, message: string): V1Pod => ({
      status: {
        phase: 'Pending',
        containerStatuses: [
          {
            name: 'tether',
            image: 'a',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { waiting: { reason, message } },
          },
        ],
      },
    });
    expect(podProgress(waiting('ImagePullBackOff', 'Back-off pulling image "a"'), 'tether')).toEqual({
      state: 'waiting',
      why: 'container tether: ImagePullBackOff: Back-off pulling image "a"',
    });
    expect(podProgress(waiting('InvalidImageName', 'couldn\'t parse image name "A"'), 'tether')).toEqual({
      state: 'failed',
      why: 'container tether: InvalidImageName: couldn\'t parse image name "A"',
    });
    expect(
      podProgress(
        {
          status: {
            phase: 'Pending',
            conditions: [
              {
                type: 'PodScheduled',
                status: 'False',
                reason: 'Unschedulable',
                message: '0/3 nodes are available',
              },
            ],
          },
        },
        'tether',
      ),
    ).toEqual({ state: 'waiting', why: 'not scheduled: Unschedulable: 0/3 nodes are available' });
    expect(
      podProgress({ status: { phase: 'Failed', reason: 'Evicted', message: 'low on memory' } }, 'tether'),
    ).toEqual({
      state: 'failed',
      why: 'the pod is Failed: Evicted: low on memory',
    });
    expect(
      podProgress(
        {
          status: {
            phase: 'Running',
            containerStatuses: [
              {
                name: 'tether',
                image: 'a',
                imageID: '',
                ready: false,
                restartCount: 0,
                state: { terminated: { exitCode: 127 } },
              },
            ],
          },
        },
        'tether',
      ),
    ).toEqual({ state: 'failed', why: 'container tether terminated: exit 127' });
  });
});
