/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Revived sessions and reconnect storms (issue 41): sessions a server answered as new after losing them, seen from
 * both sides, and reconnects after empty answers that the SDK client never gives up on.
 */
import { METRICS } from '../../../src/shared/names';
import { ALERT } from '../../alerts/names';
import { scopeMatchers } from '../common';
import { type Ctx, timeseries } from '../panels';

export function revivedPanels(ctx: Ctx) {
  const { raw } = scopeMatchers(ctx.config);
  const increase = (metric: string) => `increase(${metric}{${raw}}[$__rate_interval])`;
  const rate = (metric: string) => `rate(${metric}{${raw}}[$__rate_interval])`;
  const revived = timeseries({
    title: 'Sessions revived without their state',
    description:
      'Sessions a server answered as new after they had worked, instead of 404: the client saw another ' +
      '`Mcp-Session-Id` or "not initialized" (`client {{reason}}`), or a server accepted a session id it never held ' +
      '(`server {{state}}`: `restored` when a resume replayed events of the session from its store, `empty` for a ' +
      'fresh session under an old id or a replay of 0 events, tmcp included). **Client or `empty` grows:** subscriptions, log level and pending events are gone; ' +
      'see the runbook.',
    unit: 'short',
    targets: [
      {
        expr: `sum by (reason) (${increase(METRICS.clientRevivedSessions.prometheusName)})`,
        legend: 'client {{reason}}',
      },
      {
        expr: `sum by (state) (${increase(METRICS.serverRevivedSessions.prometheusName)})`,
        legend: 'server {{state}}',
      },
    ],
    links: ctx.links([ALERT.sessionsRevived]),
    span: 12,
    height: 8,
  });
  const storms = timeseries({
    title: 'Empty reconnects (reconnect storms)',
    description:
      'Reconnects after a GET stream that ended with no event soon after it opened, by kind (`dropped_after_empty`: ' +
      'the SDK reconnected without Last-Event-ID after an empty 200), and the GETs servers answered again soon after ' +
      'an empty answer. **About one a second per session:** ' +
      'a storm; a server answers failed resumes with 200 and nothing.',
    unit: 'reqps',
    targets: [
      {
        expr: `sum by (kind) (${rate(METRICS.clientEmptyReconnects.prometheusName)})`,
        legend: 'client {{kind}}',
      },
      { expr: `sum(${rate(METRICS.serverEmptyRepeatGets.prometheusName)})`, legend: 'server repeated GETs' },
    ],
    links: ctx.links([ALERT.reconnectStorm]),
    span: 12,
    height: 8,
  });
  return [revived, storms];
}
