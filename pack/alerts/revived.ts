/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Issue 41: sessions revived without their state, and reconnect storms after empty answers; both sides, per job. */
import { METRICS } from '../../src/shared/names';
import type { ForkwatchConfig } from '../config/config';
import { scope } from '../config/scope';
import { windowWords } from '../config/units';
import { defineAlert } from './define';
import { ALERT } from './names';
import type { RuleSpec } from './rule-model';

export function sessionsRevived(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchSessionsRevived;
  const s = scope(config);
  const client = s.sel(METRICS.clientRevivedSessions.prometheusName);
  const server = s.sel(METRICS.serverRevivedSessions.prometheusName, 'state="empty"');
  return defineAlert(
    config,
    ALERT.sessionsRevived,
    {
      expr:
        `sum by (${s.by()}) (increase(${client}[${t.window}])) > 0\nor\n` +
        `sum by (${s.by()}) (increase(${server}[${t.window}])) > 0\n`,
      for: t.for,
      comment:
        'A session answered as new after it had worked: the client saw a new Mcp-Session-Id or "not initialized";\n' +
        'a server\'s hydration accepted an id it never held with nothing to restore (state="empty").',
    },
    'MCP sessions were revived without their state.',
    `{{ $labels.job }}: {{ printf "%.0f" $value }} session(s) in the last ${windowWords(t.window)} were answered ` +
      'as new sessions after they had worked; their subscriptions, log level and pending events on the server are gone.',
  );
}

export function reconnectStorm(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchReconnectStorm;
  const s = scope(config);
  const client = s.sel(METRICS.clientEmptyReconnects.prometheusName);
  const server = s.sel(METRICS.serverEmptyRepeatGets.prometheusName);
  return defineAlert(
    config,
    ALERT.reconnectStorm,
    {
      expr:
        `sum by (${s.by()}) (rate(${client}[${t.window}])) > ${t.perSecond}\nor\n` +
        `sum by (${s.by()}) (rate(${server}[${t.window}])) > ${t.perSecond}\n`,
      for: t.for,
      comment:
        'Reconnects after empty answers (client), or GETs repeated soon after an empty answer (server): a server that\n' +
        'answers a resume with 200 and an empty stream keeps the SDK client reconnecting about once a second.',
    },
    'MCP clients are in a reconnect storm.',
    `{{ $labels.job }}: {{ $value | humanize }} empty reconnects per second over the last ${windowWords(t.window)}; ` +
      'sessions reconnect after streams that ended with no event, and the SDK client never gives up on them.',
  );
}
