import { Graph, layout } from '@dagrejs/dagre';
import type { AnyStateMachine } from 'xstate';
import { type DirectedGraphNode, toDirectedGraph } from 'xstate/graph';
import { agentMachine } from '../../machines/agent.js';
import { agentRegistryMachine } from '../../machines/agent-registry.js';
import { completionRouterMachine } from '../../machines/completion-router.js';
import { jobMachine } from '../../machines/job.js';
import { jobOwnerMachine } from '../../machines/job-owner.js';
import { jobRegistryMachine } from '../../machines/job-registry.js';
import { terminalMachine } from '../../machines/terminal.js';

/** A state of a drawn machine: its box (centre `x`, `y`), `id` as `job.running.active`. */
export interface DrawnState {
  readonly id: string;
  readonly label: string;
  readonly parent: string | null;
  readonly final: boolean;
  readonly initial: boolean;
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

/** A transition: its event, and the polyline dagre routed. */
export interface DrawnTransition {
  readonly from: string;
  readonly to: string;
  readonly event: string;
  readonly points: readonly { readonly x: number; readonly y: number }[];
}

/** One machine of machines/, laid out. */
export interface DrawnMachine {
  readonly machine: string;
  readonly width: number;
  readonly height: number;
  readonly states: readonly DrawnState[];
  readonly transitions: readonly DrawnTransition[];
}

/** Every machine of machines/ (V2): what the mirror draws. */
export const MACHINES: readonly AnyStateMachine[] = [
  jobMachine,
  jobRegistryMachine,
  jobOwnerMachine,
  terminalMachine,
  agentMachine,
  agentRegistryMachine,
  completionRouterMachine,
];

/**
 * V2: every machine of machines/ drawn from its definition — states and transitions from
 * `toDirectedGraph` (xstate/graph), laid out by dagre as a compound graph (a parent state
 * contains its children). Pure data; the page turns it into SVG.
 *
 * @example
 * ```ts
 * const [job] = drawMachines(); // job.states[0].id === 'job'
 * ```
 */
export function drawMachines(machines: readonly AnyStateMachine[] = MACHINES): DrawnMachine[] {
  return machines.map(drawMachine);
}

function drawMachine(machine: AnyStateMachine): DrawnMachine {
  const root = toDirectedGraph(machine);
  const g = new Graph({ compound: true, multigraph: true });
  g.setGraph({ rankdir: 'TB', nodesep: 30, ranksep: 40, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  const nodes: DirectedGraphNode[] = [];
  const walk = (node: DirectedGraphNode, parent: string | null): void => {
    nodes.push(node);
    if (parent !== null) {
      const label = node.stateNode.key;
      g.setNode(node.id, { label, width: Math.max(70, label.length * 7 + 24), height: 32 });
      if (parent !== root.id) g.setParent(node.id, parent);
    }
    for (const child of node.children) walk(child, node.id);
  };
  walk(root, null);
  const edges = nodes.flatMap((n) =>
    n.edges.filter((e) => e.source.id !== root.id && e.target.id !== root.id),
  );
  // dagre cannot route an edge that ends on a compound state: anchor it on its initial leaf.
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const anchor = (id: string): string => {
    const node = byId.get(id);
    if (node === undefined || node.children.length === 0) return id;
    const initial = node.stateNode.initial?.target[0]?.id;
    return anchor(node.children.find((c) => c.id === initial)?.id ?? node.children[0]!.id);
  };
  const ends = edges.map((edge) => [anchor(edge.source.id), anchor(edge.target.id)] as const);
  edges.forEach((edge, i) => {
    const event = edge.label.text;
    const [v, w] = ends[i]!;
    g.setEdge(v, w, { label: event, width: event.length * 6, height: 14 }, `e${i}`);
  });
  layout(g);
  const states = nodes
    .filter((n) => n.id !== root.id)
    .map((n): DrawnState => {
      const box = g.node(n.id);
      const parent = g.parent(n.id);
      const parentNode = n.stateNode.parent;
      return {
        id: n.id,
        label: n.stateNode.key,
        parent: typeof parent === 'string' ? parent : null,
        final: n.stateNode.type === 'final',
        initial: parentNode?.initial?.target[0] === n.stateNode,
        x: box.x,
        y: box.y,
        width: box.width,
        height: box.height,
      };
    });
  const transitions = edges.map((edge, i): DrawnTransition => {
    const [v, w] = ends[i]!;
    const drawn = g.edge({ v, w, name: `e${i}` });
    return {
      from: edge.source.id,
      to: edge.target.id,
      event: edge.label.text,
      points: ((drawn?.points ?? []) as { x: number; y: number }[]).map(({ x, y }) => ({ x, y })),
    };
  });
  const size = g.graph();
  return { machine: root.id, width: size.width ?? 0, height: size.height ?? 0, states, transitions };
}
