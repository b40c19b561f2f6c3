/**
 * V1: the fact stream's vocabulary. Every fact is plain JSON: `v` (the format version), `seq`
 * (monotonic per runtime), `ts` (wall clock, ms since the epoch), `runtime` (this runtime's id),
 * `type`, and the fields of its type. The format is documented in docs/FACTS.md.
 */

/** The format version; bumped when a field changes meaning or goes away (new fields do not). */
export const FACT_VERSION = 1;

/** A job's end as the stream tells it. `tail` is the last output (at most 2,000 chars). */
export interface JobEndedFields {
  readonly actor: string;
  readonly state: 'succeeded' | 'failed' | 'killed';
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly error: string | null;
  readonly durationMs: number;
}

/** What a fact says, without the envelope the stream adds (`v`, `seq`, `ts`, `runtime`). */
export type FactBody =
  | { readonly type: 'runtime.started'; readonly pid: number; readonly containment: string }
  | { readonly type: 'runtime.disposing' }
  | { readonly type: 'runtime.disposed' }
  | {
      readonly type: 'recovery.reaped';
      readonly runtimes: readonly {
        readonly runtimeId: string;
        readonly pid: number;
        readonly killed: number;
        readonly escaped: readonly number[];
        readonly spillFiles: number;
        readonly proof: string;
      }[];
    }
  | {
      readonly type: 'agent.created';
      readonly actor: string;
      readonly sessionId: string;
      readonly wake: string;
      readonly maxWakes: number;
    }
  | {
      readonly type: 'agent.phase';
      readonly actor: string;
      readonly phase: string;
      readonly wakes: number;
      readonly maxWakes: number;
      readonly turns: number;
    }
  | { readonly type: 'agent.retired'; readonly actor: string }
  | {
      readonly type: 'job.started';
      readonly actor: string;
      readonly owner: string;
      readonly kind: string;
      readonly label: string;
      readonly startedAt: number;
    }
  | { readonly type: 'job.state'; readonly actor: string; readonly state: string }
  | ({ readonly type: 'job.ended' } & JobEndedFields)
  | { readonly type: 'job.output'; readonly actor: string; readonly tail: string; readonly end: number }
  | { readonly type: 'terminal.opened'; readonly actor: string; readonly owner: string }
  | { readonly type: 'terminal.state'; readonly actor: string; readonly state: string }
  | {
      readonly type: 'terminal.exited';
      readonly actor: string;
      readonly exitCode: number | null;
      readonly signal: string | null;
    }
  | { readonly type: 'terminal.closed'; readonly actor: string; readonly reason: string | null }
  | {
      readonly type: 'terminal.screen';
      readonly actor: string;
      readonly text: string;
      readonly cols: number;
      readonly rows: number;
    }
  | {
      readonly type: 'notice.delivered';
      readonly actor: string;
      readonly jobs: readonly string[];
      readonly terminals: readonly string[];
    }
  | {
      readonly type: 'kill.verdict';
      readonly actor: string;
      readonly status: 'quiescent' | 'escaped';
      readonly proof: string;
      readonly killed: number;
      readonly escaped: readonly number[];
      readonly stuck: readonly number[];
    }
  | {
      readonly type: 'inspect';
      readonly kind: string;
      readonly actor: string;
      readonly parent?: string;
      readonly source?: string;
      readonly machine?: string;
      readonly event?: string;
      readonly state?: unknown;
      readonly status?: string;
    }
  | {
      readonly type: 'persist.resumed';
      readonly name: string;
      readonly jobs: number;
      readonly terminals: number;
    }
  | {
      readonly type: 'job.adopted';
      readonly actor: string;
      readonly previousOwner: string;
      readonly cursor: number;
    }
  | { readonly type: 'terminal.adopted'; readonly actor: string; readonly previousOwner: string }
  | {
      readonly type: 'log.dropped';
      readonly dropped: number;
      readonly firstSeq: number;
      readonly lastSeq: number;
    };

/** One fact as listeners and the log see it. */
export type Fact = FactBody & {
  readonly v: number;
  readonly seq: number;
  readonly ts: number;
  readonly runtime: string;
};

/** A fact type name (`job.ended`, …). */
export type FactType = FactBody['type'];

/**
 * The narrow interface services emit through (V1): one call per fact. Services depend on
 * this, never on the stream, the log or the mirror.
 *
 * @example
 * ```ts
 * facts.emit({ type: 'kill.verdict', actor: `job:${id}`, ...verdictFields(verdict) });
 * ```
 */
export interface FactSink {
  emit(fact: FactBody): void;
  /**
   * Registers a read-only view of a live actor (a job's output tail, a terminal's screen) that
   * the stream samples while an observer asked for samples; the returned function removes it
   * (with `final`, after one last sample: what a closed terminal showed last).
   */
  watch(actor: string, sample: () => FactBody | Promise<FactBody>, final?: boolean): () => void;
}

/** A sink that drops everything: what services use when nobody gave them one. */
export const NO_FACTS: FactSink = { emit: () => {}, watch: () => () => {} };

/** Characters of output a `job.output` fact carries at most. */
export const OUTPUT_TAIL_CHARS = 2_000;

/** What `rt.observe(listener, options)` takes. */
export interface ObserveOptions {
  /** First deliver the recent facts the stream still holds (the last 2,000); default false. */
  readonly replay?: boolean;
  /** Also deliver inspection events (`type: 'inspect'`) under stable actor ids; default false. */
  readonly inspection?: boolean;
  /**
   * Also sample live views twice a second — `job.output` tails and `terminal.screen`s that
   * changed; default false (nobody pays for sampling while no observer asked for it).
   */
  readonly samples?: boolean;
}
