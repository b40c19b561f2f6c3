import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ErrorCode, isJSONRPCRequest, JSONRPC_VERSION } from '@modelcontextprotocol/sdk/types.js';

/**
 * Speaks just enough MCP to tell a client why this server cannot serve it: every request
 * (`initialize` first) is answered with a JSON-RPC error carrying `message`, so the client shows
 * that instead of "Connection closed" (what it shows when the server exits before answering).
 * Resolves when the client closes stdin (or stdout breaks).
 *
 * @example
 * ```ts
 * process.stderr.write(`${message}\n`);
 * if (!process.stdin.isTTY) await refuseOverStdio(message);
 * process.exitCode = 2;
 * ```
 */
export async function refuseOverStdio(
  message: string,
  input: Readable = process.stdin,
  output: Writable = process.stdout,
): Promise<void> {
  const transport = new StdioServerTransport(input, output);
  const ended = new Promise<void>((resolve) => {
    input.once('end', resolve);
    input.once('close', resolve);
    output.once('error', resolve);
  });
  transport.onerror = () => {}; // a line that is not JSON-RPC: nothing to answer
  transport.onmessage = (msg) => {
    if (!isJSONRPCRequest(msg)) return; // notifications get no answer
    void transport.send({
      jsonrpc: JSONRPC_VERSION,
      id: msg.id,
      error: { code: ErrorCode.InvalidParams, message },
    });
  };
  await transport.start();
  await ended;
  await transport.close();
  input.destroy(); // let the event loop end
}
