/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Opening the probe's session as a client would: `initialize`, then `notifications/initialized`. Decides early
 * when there is nothing to probe: unreachable, not authorized, or a protocol version without resumption.
 */
import { PROBE_USER_AGENT } from '../../shared/names';
import { PACKAGE_VERSION } from '../../shared/version';
import { type McpHttp, redirected, shownType } from './mcp-http';
import { FIRST_UNRESUMABLE_VERSION, RESUMABLE_PROTOCOL_VERSIONS } from './options';
import { type ConditionName, type ConditionResult, allConditions } from './report';
import { quoted } from './server-text';
import type { SseFrame } from './sse-reader';

export const PROBE_CLIENT_INFO = { name: PROBE_USER_AGENT, version: PACKAGE_VERSION };
const INITIALIZE_ID = 'forkwatch-probe-initialize';

interface Stopped {
  kind: 'stop';
  conditions: Record<ConditionName, ConditionResult>;
  negotiated?: string;
  serverSupported?: string[];
}

export type SessionOutcome =
  | {
      kind: 'open';
      negotiated: string;
      initFrames: SseFrame[];
      notes: string[];
      /** The server's `capabilities` from its initialize result ({} when absent). */
      serverCapabilities: Record<string, unknown>;
    }
  | Stopped;

/**
 * The probe declares roots (with list_changed) so that a server which uses roots asks for them again on the
 * standalone stream when told they changed: one of the ways it can make a server send there (standalone.ts).
 */
const PROBE_CAPABILITIES = { roots: { listChanged: true } };

const stop = (
  status: ConditionResult['status'],
  detail: string,
  extra: Pick<Stopped, 'negotiated' | 'serverSupported'> = {},
): Stopped => ({ kind: 'stop', conditions: allConditions(status, detail), ...extra });

/** On success, `http` carries the session id and protocol version for every later request. */
export async function openSession(http: McpHttp, protocolVersion: string): Promise<SessionOutcome> {
  const init = await http.send('initialize', 'POST', {
    message: {
      jsonrpc: '2.0',
      id: INITIALIZE_ID,
      method: 'initialize',
      params: { protocolVersion, capabilities: PROBE_CAPABILITIES, clientInfo: PROBE_CLIENT_INFO },
    },
  });
  if (init.status === 0) return stop('not_tested', `initialize: ${init.error}`);
  if (init.status === 401 || init.status === 403) {
    await init.close();
    const challenge = init.headers?.get('www-authenticate');
    const hint = `${challenge ? ` (${quoted(challenge)})` : ''}; pass --bearer or -H 'Name: value'`;
    return stop('not_tested', `initialize answered ${init.status}: not authorized${hint}`);
  }
  if (init.status >= 300 && init.status < 400) {
    await init.close();
    return stop('not_tested', `initialize ${redirected(init)}`);
  }

  // An error answer may carry the request's id or null (JSON-RPC's "could not tell"): any error response is read.
  const ok = init.status >= 200 && init.status < 300;
  const read = await http.readResponse(init, ok ? INITIALIZE_ID : undefined, http.deadline());
  if (read.message === undefined) {
    // A wrong path or not an MCP server: one line with what came back, never the page itself.
    const why = read.error?.startsWith('no JSON-RPC response') ? 'no JSON-RPC response' : (read.error ?? 'no body');
    return stop(
      'not_tested',
      `initialize answered ${init.status} (${shownType(init)}), ${why}: not an MCP endpoint at this URL?`,
    );
  }
  const error = read.message?.error as { message?: string; data?: { supported?: unknown } } | undefined;
  if (error !== undefined || !ok) {
    // 2026-07-28-only servers refuse 2025 versions with the list of what they speak.
    const supported = Array.isArray(error?.data?.supported) ? error.data.supported.filter(isVersion) : undefined;
    const extra = supported ? { serverSupported: supported } : {};
    if (supported && supported.length > 0 && supported.every(v => v >= FIRST_UNRESUMABLE_VERSION)) {
      return stop(
        'not_applicable',
        `server speaks only ${supported.join(', ')}: no sessions, no Last-Event-ID resumption`,
        extra,
      );
    }
    const message = typeof error?.message === 'string' ? quoted(error.message) : (read.error ?? '');
    return stop('not_tested', `initialize answered ${init.status}: ${message}`.trim(), extra);
  }

  const result = read.message?.result as { protocolVersion?: unknown; capabilities?: unknown } | undefined;
  const chosen = result?.protocolVersion;
  const negotiated = isVersion(chosen) ? chosen : undefined;
  if (negotiated === undefined) {
    const shown = isString(chosen) ? ` but ${quoted(chosen, 40)}` : '';
    return stop('not_tested', `initialize result carries no protocolVersion (a YYYY-MM-DD date)${shown}`);
  }
  if (!(RESUMABLE_PROTOCOL_VERSIONS as readonly string[]).includes(negotiated)) {
    return stop('not_applicable', `server negotiated ${negotiated}, which has no Last-Event-ID resumption`, {
      negotiated,
    });
  }

  http.sessionId = init.headers?.get('mcp-session-id') ?? undefined;
  http.protocolVersion = negotiated;
  const notes: string[] = [];
  if (http.sessionId === undefined) notes.push('no Mcp-Session-Id: the server runs without sessions');
  if (negotiated !== protocolVersion) notes.push(`asked for ${protocolVersion}, server chose ${negotiated}`);

  const initialized = await http.send('initialized', 'POST', {
    message: { jsonrpc: '2.0', method: 'notifications/initialized' },
  });
  await initialized.close();
  if (initialized.status < 200 || initialized.status >= 300) {
    notes.push(`notifications/initialized answered ${initialized.status || initialized.error}`);
  }
  const capabilities = result?.capabilities;
  const serverCapabilities =
    typeof capabilities === 'object' && capabilities !== null ? (capabilities as Record<string, unknown>) : {};
  return { kind: 'open', negotiated, initFrames: read.frames, notes, serverCapabilities };
}

function isString(value: unknown): value is string {
  return typeof value === 'string';
}

/** A protocol version as MCP writes them: a date. Anything else is text the server chose, never a version. */
function isVersion(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9]{4}-[0-9]{2}-[0-9]{2}$/.test(value);
}
