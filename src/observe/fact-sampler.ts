import type { FactBody } from './fact-types.js';

/** How often live views are sampled while an observer wants samples. */
export const SAMPLE_INTERVAL_MS = 500;

type Sample = () => FactBody | Promise<FactBody>;

/**
 * The live views services registered (`FactSink.watch`), sampled on one interval that runs
 * only while `wanted` > 0; a sample equal to the previous one of the same actor is not emitted.
 *
 * @example
 * ```ts
 * const sampler = new FactSampler((fact) => stream.emit(fact));
 * const unwatch = sampler.watch('job:job_x', () => tailFact());
 * sampler.want(+1); // starts the interval
 * ```
 */
export class FactSampler {
  readonly #emit: (fact: FactBody) => void;
  readonly #views = new Map<string, { sample: Sample; last: string }>();
  #wanted = 0;
  #timer: ReturnType<typeof setInterval> | null = null;
  #closed = false;

  constructor(emit: (fact: FactBody) => void) {
    this.#emit = emit;
  }

  /** Armed timers (0 or 1): counted in `rt.stats().timers`. */
  get timers(): number {
    return this.#timer === null ? 0 : 1;
  }

  watch(actor: string, sample: Sample, final = false): () => void {
    const view = { sample, last: '' };
    this.#views.set(actor, view);
    return () => {
      if (this.#views.get(actor) !== view) return;
      this.#views.delete(actor);
      if (final && this.#timer !== null) this.#sample(view); // the last view: a terminal's final screen
    };
  }

  want(delta: number): void {
    this.#wanted += delta;
    if (this.#wanted > 0 && this.#timer === null && !this.#closed) {
      this.#timer = setInterval(() => this.#tick(), SAMPLE_INTERVAL_MS);
      this.#tick();
    } else if (this.#wanted <= 0) this.#stop();
  }

  close(): void {
    this.#closed = true;
    this.#stop();
    this.#views.clear();
  }

  #stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  #tick(): void {
    for (const view of this.#views.values()) this.#sample(view);
  }

  #sample(view: { sample: Sample; last: string }): void {
    Promise.resolve()
      .then(view.sample)
      .then(
        (fact) => {
          const key = JSON.stringify(fact);
          if (key === view.last || this.#closed) return;
          view.last = key;
          this.#emit(fact);
        },
        () => {}, // a view that ended between ticks has nothing to show
      );
  }
}
