/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Protocol 2026-07-28 (per-request MCP, no sessions): the delivered-results SLO with its burn-rate alerts, and two
 * tickets. SLI (issue 40): of the exchanges clients asked for, the share lost by the transport to a client that still
 * wanted its result: `forkwatch_server_probable_reissues_total` (an exchange that broke, asked for again by the same
 * principal, in whichever order the server heard of the two) over those plus the exchanges whose terminal response
 * was written (`delivered`, `unconfirmed`). A late result nobody asked for again is on neither side: the 2.x client
 * cancels by closing the request's stream, so an app's cancel, a client timeout and a client that died look like a
 * break to the server, and page nobody (the client's own outcomes tell them apart).
 */
import { METRICS, SERVER_EXCHANGE_WRITTEN_OUTCOMES } from '../../src/shared/names';
import type { ForkwatchConfig } from '../config/config';
import { sloWindows } from '../config/links';
import { scope } from '../config/scope';
import { percent, windowWords } from '../config/units';
import { defineAlert } from './define';
import type { Scope } from '../config/scope';
import { ALERT } from './names';
import type { RuleSpec } from './rule-model';
import { type Sli, burnAlerts } from './slo';

export const RESULT_LOSS_RATIO = (window: string) => `job:forkwatch_server_result_loss:ratio_rate${window}`;

function resultSli(config: ForkwatchConfig): Sli {
  const s = scope(config);
  const lost = s.sel(METRICS.serverProbableReissues.prometheusName);
  const delivered = s.sel(
    METRICS.serverExchanges.prometheusName,
    `outcome=~"${SERVER_EXCHANGE_WRITTEN_OUTCOMES.join('|')}"`,
  );
  const sum = (fn: string, w: string, series: string) => `sum by (${s.by()}) (${fn}(${series}[${w}]))`;
  return {
    ratio: w => `${sum('rate', w, lost)}\n/\n(${sum('rate', w, lost)} + ${sum('rate', w, delivered)})\n`,
    total: w => `(${sum('increase', w, lost)} + ${sum('increase', w, delivered)})`,
  };
}

export function perRequestRecordingRules(config: ForkwatchConfig): RuleSpec[] {
  const sli = resultSli(config);
  return sloWindows(config).map((w, i) => ({
    record: RESULT_LOSS_RATIO(w),
    expr: sli.ratio(w),
    ...(i === 0
      ? {
          comment:
            'Per-request (2026-07-28) delivered-results SLI: of the exchanges clients asked for, the share that broke\n' +
            'and was asked for again (probable re-issues, in either order), over those plus the exchanges written.\n' +
            'A late result nobody asked for again (a cancel, a timeout, a client that died) is on neither side.',
        }
      : {}),
  }));
}

export function perRequestAlerts(config: ForkwatchConfig): RuleSpec[] {
  const s = scope(config);
  const burn = burnAlerts(
    config,
    ALERT.serverResultDeliveryBudgetBurn,
    config.serverResultObjective,
    resultSli(config),
    RESULT_LOSS_RATIO,
    {
      summary: 'MCP servers lose results that clients then ask for again (per-request, 2026-07-28).',
      describe: w =>
        `the per-request exchanges clients asked for in the last ${windowWords(w.long)} broke and were asked for ` +
        'again',
      sloName: 'delivered-results SLO',
    },
  );
  (burn[0] as RuleSpec).comment =
    `Results lost by the transport behind per-request exchanges. SLO: ${percent(config.serverResultObjective)} of the\n` +
    'exchanges clients ask for reach them without a re-issue. Same windows, factors and traffic floors as the other\n' +
    'SLOs. Cancels and clients that died are no bad events (no re-issue follows them).';

  const dup = config.alerts.ForkwatchServerDuplicateExecutionRisk;
  const duplicateRisk = defineAlert(
    config,
    ALERT.serverDuplicateExecutionRisk,
    {
      expr: anyIncreaseOf(
        s,
        dup.window,
        s.sel(METRICS.serverProbableReissues.prometheusName, 'idempotency="not_idempotent"'),
        'instance',
      ),
      for: dup.for,
      comment:
        'A request re-issued after a broken exchange (same principal, tool and argument digest, MRTR retries\n' +
        'excluded) for a tool not annotated idempotent: the first execution may have committed already. A ticket:\n' +
        'the server cannot know whether the side effect happened twice, only that it may have.',
    },
    'Tools not annotated idempotent were probably re-issued after a broken exchange.',
    `{{ $labels.instance }} ({{ $labels.job }}): {{ printf "%.0f" $value }} probable re-issue(s) of non-idempotent ` +
      `tool calls in the last ${windowWords(dup.window)}; each may have executed twice.`,
  );

  const nl = config.alerts.ForkwatchServerPublishesWithoutListener;
  const publishes = METRICS.serverListenPublishes.prometheusName;
  const by = s.by('instance');
  const all = `sum by (${by}) (increase(${s.sel(publishes)}[${nl.window}]))`;
  const noListener = defineAlert(
    config,
    ALERT.serverPublishesWithoutListener,
    {
      expr:
        `sum by (${by}) (increase(${s.sel(publishes, 'outcome="no_listener"')}[${nl.window}]))\n/\n${all}\n` +
        `> ${nl.share}\nand on (${by})\n${all} >= ${nl.minEvents}\n`,
      for: nl.for,
      comment:
        'Per process: change notifications published on the in-memory event bus while no subscriptions/listen\n' +
        'stream was open on this process. listen streams have no replay, so these are lost to every client whose\n' +
        'stream is on another replica or was dropped. A ticket: the fix is a shared bus or re-listening clients.',
    },
    'MCP server publishes notifications with no listen stream on its process.',
    '{{ $labels.instance }} ({{ $labels.job }}): {{ $value | humanizePercentage }} of the notifications it published ' +
      `in the last ${windowWords(nl.window)} had no listen stream on this process (threshold ${percent(nl.share)}).`,
  );
  return [...burn, duplicateRisk, noListener];
}

/** define.ts's anyIncrease, for a selector with its own matchers: any increase, or a series born above 0. */
export function anyIncreaseOf(s: Scope, window: string, m: string, ...labels: string[]): string {
  return (
    `sum by (${s.by(...labels)}) (\n    (increase(${m}[${window}]) > 0)\n  or\n    (\n` +
    `      (${m} > 0 unless ${m} offset ${window})\n` +
    `      and on (${s.by()}) group by (${s.by()}) (${s.sel('up')} offset ${window})\n    )\n)\n`
  );
}
