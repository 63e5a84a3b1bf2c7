/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Ways a client can make a server send on its standalone GET stream without side effects the probe cannot
 * answer for. Servers differ: each trigger is tried in turn, and the first that makes a message arrive is used
 * again while the stream is away (to test the replay) and after the resume (to test that the stream continues).
 *
 * - `notify_tool`: a tool the operator names (`--notify-tool`) that sends server-initiated notifications.
 * - `roots_list_changed`: the probe declared roots, so a server that uses them asks for them again (a roots/list
 *   request on the standalone stream) when told they changed. Harmless: the probe answers with no roots.
 * Calling arbitrary tools, or waiting for list_changed or resource updates the probe cannot cause, is not
 * generic; a server that sends on its own (`unprompted`) is used when nothing else works.
 */
import { type JsonRpcMessage, type McpHttp, errorMessage } from './mcp-http';
import type { StandaloneTrigger } from './report';
import { quoted } from './server-text';

export interface Trigger {
  name: StandaloneTrigger;
  describe: string;
  /** Makes the server send; resolves to why it could not, or undefined. */
  fire(): Promise<string | undefined>;
}

export interface TriggerOptions {
  notifyTool?: string;
  notifyArgs?: Record<string, unknown>;
}

let nextId = 1;

export function availableTriggers(http: McpHttp, options: TriggerOptions): Trigger[] {
  const triggers: Trigger[] = [];
  if (options.notifyTool !== undefined) {
    const name = options.notifyTool;
    triggers.push({
      name: 'notify_tool',
      describe: `tools/call ${name}`,
      fire: () => request(http, 'notify_tool', 'tools/call', { name, arguments: options.notifyArgs ?? {} }),
    });
  }
  triggers.push({
    name: 'roots_list_changed',
    describe: 'notifications/roots/list_changed',
    fire: async () => {
      const sent = await http.send('roots_list_changed', 'POST', {
        message: { jsonrpc: '2.0', method: 'notifications/roots/list_changed' },
      });
      await sent.close();
      return sent.status >= 200 && sent.status < 300 ? undefined : `answered ${sent.status || sent.error}`;
    },
  });
  return triggers;
}

/** `logging/setLevel debug` when the server logs, so that a notify tool's logging messages are not filtered. */
export async function enableLogging(http: McpHttp, serverCapabilities: Record<string, unknown>): Promise<void> {
  if (serverCapabilities.logging === undefined) return;
  await request(http, 'logging_set_level', 'logging/setLevel', { level: 'debug' });
}

async function request(
  http: McpHttp,
  step: string,
  method: string,
  params: Record<string, unknown>,
): Promise<string | undefined> {
  const id = `forkwatch-probe-${step}-${nextId++}`;
  const exchange = await http.send(step, 'POST', { message: { jsonrpc: '2.0', id, method, params } });
  if (exchange.status === 0) return exchange.error;
  if (exchange.status < 200 || exchange.status >= 300)
    return `answered ${exchange.status}${await errorMessage(http, exchange)}`;
  const read = await http.readResponse(exchange, id, http.deadline());
  const error = (read.message as JsonRpcMessage | undefined)?.error as { message?: unknown } | undefined;
  if (read.message === undefined) return read.error ?? 'no response';
  if (error !== undefined) return `error: ${quoted(String(error.message ?? 'unknown'))}`;
  const result = read.message.result as { isError?: unknown } | undefined;
  return result?.isError === true ? 'the tool reported an error' : undefined;
}
