import { randomBytes } from 'node:crypto';
import type { InspectionEvent } from 'xstate';
import { assertArgument } from '../errors.js';
import { FactSampler } from './fact-sampler.js';
import { FACT_VERSION, type Fact, type FactBody, type FactSink, type ObserveOptions } from './fact-types.js';
import { inspectionFacts } from './inspection-facts.js';

/** Facts kept for late observers (`observe(listener, { replay: true })`), newest last. */
export const REPLAY_FACTS = 2_000;

interface Listener {
  readonly fn: (fact: Fact) => void;
  readonly inspection: boolean;
  readonly samples: boolean;
}

/** The runtime's fact stream (V1): what services emit into and what observers read. */
export interface FactStream extends FactSink {
  /** This runtime's id (`rt_…`), in every fact: a new id means a restarted runtime. */
  readonly runtimeId: string;
  /** The XState inspector every actor system of the runtime is created with. */
  readonly inspect: (event: InspectionEvent) => void;
  observe(listener: (fact: Fact) => void, options?: ObserveOptions): () => void;
  /** Listeners now. */
  readonly listeners: number;
  /** The sampler's armed interval (0 or 1), for `rt.stats().timers`. */
  readonly timers: number;
  /** Delivers what is queued, drops every listener and ignores later facts. */
  close(): void;
}

/**
 * Creates the fact stream: facts get their envelope (`v`, `seq`, `ts`, `runtime`) here and
 * reach listeners in a microtask, outside the machine transition that produced them (a
 * listener may call the runtime). A listener that throws is reported once and kept.
 *
 * @example
 * ```ts
 * const facts = createFactStream();
 * const stop = facts.observe((fact) => console.log(fact.seq, fact.type));
 * facts.emit({ type: 'runtime.disposing' });
 * stop();
 * ```
 */
export function createFactStream(
  options: { readonly userInspect?: (e: InspectionEvent) => void } = {},
): FactStream {
  const runtimeId = `rt_${randomBytes(6).toString('base64url')}`;
  const listeners = new Set<Listener>();
  // The newest REPLAY_FACTS facts, a ring once full: `oldest` is where the oldest one is.
  const recent: Fact[] = [];
  let oldest = 0;
  let queue: Fact[] = [];
  let seq = 0;
  let scheduled = false;
  let inspecting = 0;
  let warned = false;
  let closed = false;

  const flush = (): void => {
    scheduled = false;
    const batch = queue;
    queue = [];
    for (const fact of batch)
      for (const listener of listeners) {
        if (fact.type === 'inspect' && !listener.inspection) continue;
        call(listener, fact);
      }
  };
  const call = (listener: Listener, fact: Fact): void => {
    try {
      listener.fn(fact);
    } catch (error) {
      if (warned) return;
      warned = true;
      process.emitWarning(`tether: an observe() listener threw: ${String(error)}`, {
        code: 'TETHER_OBSERVE',
      });
    }
  };
  const stamp = (body: FactBody): Fact => ({
    v: FACT_VERSION,
    seq: ++seq,
    ts: Date.now(),
    runtime: runtimeId,
    ...body,
  });
  const enqueue = (fact: Fact): void => {
    if (listeners.size === 0 || closed) return;
    queue.push(fact);
    if (!scheduled) {
      scheduled = true;
      queueMicrotask(flush);
    }
  };
  const emit = (body: FactBody): void => {
    if (closed) return;
    const fact = stamp(body);
    if (recent.length < REPLAY_FACTS) recent.push(fact);
    else {
      recent[oldest] = fact;
      oldest = (oldest + 1) % REPLAY_FACTS;
    }
    enqueue(fact);
  };
  const sampler = new FactSampler(emit);
  const derived = inspectionFacts(
    { emit, watch: (actor, sample, final) => sampler.watch(actor, sample, final) },
    { wanted: () => inspecting > 0, emit: (body) => enqueue(stamp(body)) },
  );
  const { userInspect } = options;

  return {
    runtimeId,
    emit,
    watch: (actor, sample, final) => sampler.watch(actor, sample, final),
    get timers() {
      return sampler.timers;
    },
    inspect: userInspect
      ? (event) => {
          derived(event);
          userInspect(event);
        }
      : derived,
    get listeners() {
      return listeners.size;
    },
    observe(fn, opts = {}) {
      assertArgument(typeof fn === 'function', 'observe(listener) takes a function (fact) => void');
      assertArgument(typeof opts === 'object' && opts !== null, 'observe options must be an object');
      const listener: Listener = { fn, inspection: opts.inspection === true, samples: opts.samples === true };
      if (opts.replay === true) {
        // Queued facts reach the new listener with the next flush; replay stops before them.
        const next = queue[0]?.seq ?? Number.POSITIVE_INFINITY;
        for (let i = 0; i < recent.length; i++) {
          const fact = recent[(oldest + i) % recent.length]!;
          if (fact.seq < next) call(listener, fact);
        }
      }
      listeners.add(listener);
      if (listener.inspection) inspecting++;
      if (listener.samples) sampler.want(+1);
      let active = true;
      return () => {
        if (!active) return;
        active = false;
        listeners.delete(listener);
        if (listener.inspection) inspecting--;
        if (listener.samples) sampler.want(-1);
      };
    },
    close() {
      sampler.close();
      flush();
      closed = true; // nothing is told after `runtime.disposed`
      listeners.clear();
      inspecting = 0;
    },
  };
}
