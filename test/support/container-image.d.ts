/**
 * The image's name, built on first use.
 *
 * @example
 * ```ts
 * const image = await hostImage(); // 'localhost/tether-host:3f2a…'
 * ```
 */
export declare function hostImage(): Promise<string>;
/** The label every test container carries, so a crashed run's containers can be found and removed. */
export declare const TEST_LABEL = 'tether-test=1';
/** {@link startContainer}'s options. */
export interface StartContainerOptions {
  readonly name?: string;
  /** More labels, `key=value`. */
  readonly labels?: readonly string[];
  /** More `podman run` flags, before the image. */
  readonly args?: readonly string[];
  /** The container's command; default the image's `sleep infinity`. */
  readonly command?: readonly string[];
  /** Default the host image. */
  readonly image?: string;
}
/**
 * Starts one container of the host image (runc, ulimits and an init as FIELD-NOTES says work
 * here), labelled for removal; returns its name. Rejects with podman's error output.
 *
 * @example
 * ```ts
 * const name = await startContainer(); // later: removeContainer(name)
 * ```
 */
export declare function startContainer(options?: StartContainerOptions): Promise<string>;
/**
 * Removes a container this test process started (`podman rm -f`, which also stops it).
 *
 * @example
 * ```ts
 * removeContainer(name);
 * ```
 */
export declare function removeContainer(name: string): void;
/** {@link removeContainer} without blocking the event loop. */
export declare function removeContainerAsync(name: string): Promise<void>;
/** Removes every test container whose test process is gone (a crashed earlier run). */
export declare function removeStaleContainers(): void;
