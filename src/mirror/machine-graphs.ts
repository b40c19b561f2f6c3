import { Graph, layout } from '@dagrejs/dagre';
import type { AnyStateMachine } from 'xstate';
import { type DirectedGraphNode, toDirectedGraph } from 'xstate/graph';
import { agentMachine } from '../../machines/agent.js';
import { agentRegistryMachine } from '../../machines/agent-registry.js';
import { completionRouterMachine } from '../../machines/completion-router.js';
import { jobMachine } from '../../machines/job.js';
import { jobOwnerMachine } from '../../machines/job-owner.js';
import { jobRegistryMachine } from '../../machines/job-registry.js';
import { jobShardMachine } from '../../machines/job-shard.js';
import { terminalMachine } from '../../machines/terminal.js';

/** A state of a drawn machine: its box (centre `x`, `y`), `id` as `job.running.active`. */
export interface DrawnState {
  readonly id: string;
  readonly label: string;
  readonly parent: string | null;
  readonly final: boolean;
  readonly initial: boolean;
  /** Events it handles without leaving it (targetless or self transitions), listed in its box. */
  readonly events: readonly string[];
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

/** A transition between two states: its events (one line each), and the polyline dagre routed. */
export interface DrawnTransition {
  readonly from: string;
  readonly to: string;
  /** `events` joined with ' | '. */
  readonly event: string;
  readonly events: readonly string[];
  readonly points: readonly { readonly x: number; readonly y: number }[];
  /** The centre of the label's box. */
  readonly label: { readonly x: number; readonly y: number };
}

/** One machine of machines/, laid out. */
export interface DrawnMachine {
  readonly machine: string;
  readonly width: number;
  readonly height: number;
  readonly states: readonly DrawnState[];
  readonly transitions: readonly DrawnTransition[];
  /** Events the machine handles in every state (its root's `on`), shown beside its name. */
  readonly everywhere: readonly string[];
}

// Box metrics the page draws with (11px labels, 10px event lines).
const LINE = 13;
const textWidth = (text: string, perChar: number) => Math.ceil(text.length * perChar);

/** Every machine of machines/ (V2): what the mirror draws. */
export const MACHINES: readonly AnyStateMachine[] = [
  jobMachine,
  jobRegistryMachine,
  jobShardMachine,
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
  const walk = (node: DirectedGraphNode): void => {
    nodes.push(node);
    for (const child of node.children) walk(child);
  };
  walk(root);
  const all = nodes.flatMap((n) => n.edges);
  const selfEvents = (id: string) =>
    unique(all.filter((e) => e.source.id === id && e.target.id === id).map((e) => e.label.text));
  // A machine without states (only a root `on`, e.g. one that keeps children) is one box, itself.
  const stateless = root.children.length === 0;
  const drawn = stateless ? nodes : nodes.filter((n) => n.id !== root.id);
  const events = new Map(drawn.map((n) => [n.id, selfEvents(n.id)]));
  for (const n of drawn) {
    const label = n.id === root.id ? n.id : n.stateNode.key;
    const own = events.get(n.id) ?? [];
    g.setNode(n.id, {
      label,
      width: Math.max(70, textWidth(label, 7) + 24, ...own.map((e) => textWidth(`↻ ${e}`, 6) + 16)),
      height: 32 + own.length * LINE,
    });
    const parent = n.stateNode.parent;
    if (parent && parent !== machine.root) g.setParent(n.id, parent.id);
  }
  // Transitions between two states, the same two merged into one line with a label per event;
  // the root's own and every self transition are listed in a box instead (no loop to route).
  const between = new Map<string, { from: string; to: string; events: string[] }>();
  for (const e of all) {
    if (e.source.id === e.target.id || e.source.id === root.id || e.target.id === root.id) continue;
    const key = `${e.source.id}\0${e.target.id}`;
    const edge = between.get(key) ?? { from: e.source.id, to: e.target.id, events: [] };
    if (!edge.events.includes(e.label.text)) edge.events.push(e.label.text);
    between.set(key, edge);
  }
  const edges = [...between.values()];
  // dagre cannot route an edge that ends on a compound state: anchor it on its initial leaf.
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const anchor = (id: string): string => {
    const node = byId.get(id);
    if (node === undefined || node.children.length === 0) return id;
    const initial = node.stateNode.initial?.target[0]?.id;
    return anchor(node.children.find((c) => c.id === initial)?.id ?? node.children[0]!.id);
  };
  const ends = edges.map((edge) => [anchor(edge.from), anchor(edge.to)] as const);
  edges.forEach((edge, i) => {
    const [v, w] = ends[i]!;
    g.setEdge(
      v,
      w,
      {
        width: Math.max(...edge.events.map((e) => textWidth(e, 5.6))),
        height: edge.events.length * 12,
        labelpos: 'c',
      },
      `e${i}`,
    );
  });
  layout(g);
  const states = drawn.map((n): DrawnState => {
    const box = g.node(n.id);
    const parent = g.parent(n.id);
    const parentNode = n.stateNode.parent;
    return {
      id: n.id,
      label: n.id === root.id ? n.id : n.stateNode.key,
      parent: typeof parent === 'string' ? parent : null,
      final: n.stateNode.type === 'final',
      initial: n.id === root.id || parentNode?.initial?.target[0] === n.stateNode,
      events: events.get(n.id) ?? [],
      x: box.x,
      y: box.y,
      width: box.width,
      height: box.height,
    };
  });
  const transitions = edges.map((edge, i): DrawnTransition => {
    const [v, w] = ends[i]!;
    const routed = g.edge({ v, w, name: `e${i}` }) as
      | { points?: { x: number; y: number }[]; x?: number; y?: number }
      | undefined;
    const points = (routed?.points ?? []).map(({ x, y }) => ({ x, y }));
    const middle = points[Math.floor(points.length / 2)] ?? { x: 0, y: 0 };
    return {
      from: edge.from,
      to: edge.to,
      event: edge.events.join(' | '),
      events: edge.events,
      points,
      label: { x: routed?.x ?? middle.x, y: routed?.y ?? middle.y },
    };
  });
  const size = g.graph();
  return {
    machine: root.id,
    width: size.width ?? 0,
    height: size.height ?? 0,
    states,
    transitions,
    everywhere: stateless ? [] : [...selfEvents(root.id), ...rootTargeted(root)],
  };
}

// The root's transitions into one of its states, as 'EVENT → state'.
function rootTargeted(root: DirectedGraphNode): string[] {
  return unique(
    root.edges.filter((e) => e.target.id !== root.id).map((e) => `${e.label.text} → ${e.target.key}`),
  );
}

function unique(items: readonly string[]): string[] {
  return [...new Set(items)];
}
