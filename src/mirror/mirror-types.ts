import type { Fact, ObserveOptions } from '../observe/fact-types.js';

/** Where a mirror's facts come from: a runtime (`rt.observe`) or a recorded log (V3). */
export interface FactSource {
  observe(listener: (fact: Fact) => void, options?: ObserveOptions): () => void;
}

/** `createMirror(source, options)`. */
export interface MirrorOptions {
  /** TCP port; default 0 (any free port: read it from `mirror.url`). */
  readonly port?: number;
  /** Interface to bind; default `127.0.0.1` (V4: loopback only unless told otherwise). */
  readonly host?: string;
  /** The page shows a recorded log: everything is history, nothing controllable (V3). */
  readonly replay?: boolean;
}

/** A running mirror. */
export interface Mirror {
  /** Open this once: it carries the one-time code that becomes the browser's session (V4). */
  readonly url: string;
  /** `http://host:port` without any secret. */
  readonly origin: string;
  /** Ends every connection and stops the server. Idempotent. */
  close(): Promise<void>;
}
