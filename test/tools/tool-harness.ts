import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { createRuntime, type Runtime } from '../../src/index.js';
import { createToolRegistry } from '../../src/tools/tool-registry.js';
import type { ToolRegistry, ToolRegistryOptions, ToolResult } from '../../src/tools/tool-types.js';

export interface ToolHarness {
  readonly rt: Runtime;
  readonly tools: ToolRegistry;
  readonly spillDir: string;
  /** Disposes the runtime (D2) and removes the spill directory. */
  close(): Promise<void>;
}

// A runtime with a private spill directory and short kill grace, and a registry over it.
export async function toolHarness(options: ToolRegistryOptions = {}): Promise<ToolHarness> {
  const spillDir = await mkdtemp(join(tmpdir(), 'tether-tools-test-'));
  const rt = await createRuntime({ spillDir, limits: { cleanupGraceMs: 300, drainMs: 300 } });
  return {
    rt,
    tools: createToolRegistry(rt, options),
    spillDir,
    async close() {
      await rt.dispose();
      await rm(spillDir, { recursive: true, force: true });
    },
  };
}

/** Asserts a successful result (showing its text when it is not) and returns it narrowed. */
export function ok(result: ToolResult): Extract<ToolResult, { ok: true }> {
  expect(result.ok, result.text).toBe(true);
  return result as Extract<ToolResult, { ok: true }>;
}

/** Asserts a failed result with `code` and returns it narrowed. */
export function failed(result: ToolResult, code: string): Extract<ToolResult, { ok: false }> {
  expect(result.ok, result.text).toBe(false);
  expect((result as { code?: string }).code, result.text).toBe(code);
  return result as Extract<ToolResult, { ok: false }>;
}

/** The `data` field of a successful result, typed as the test expects. */
export function dataOf<T>(result: ToolResult): T {
  return ok(result).data as T;
}
