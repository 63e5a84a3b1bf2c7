/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The two SLOs and their multi-window, multi-burn-rate alerts (SRE workbook ch. 5), built the same way:
 *  - client resume loss: of the resumes answered 2xx whose ids could prove or disprove continuity, the share that
 *    forked (`unverified`, `inconclusive`, `rejected` and `failed` are on neither side: an idle session's resume
 *    stays silent until the verdict timeout, which is no evidence of loss, and must never page);
 *  - server delivery: of the events servers stored or wrote, the share lost to a live client (a loss reason of
 *    src/shared/names.ts; `abandoned`, the client gone for good, is not loss).
 */
import { valuesWith } from '../../src/core/evidence';
import { RESUME_OUTCOMES, type ResumeOutcome } from '../../src/core/verdict';
import { METRICS, SERVER_UNDELIVERED_LOSS_REASONS } from '../../src/shared/names';
import type { BurnWindow, ForkwatchConfig } from '../config/config';
import { alertLinks, errorBudget, sloWindows } from '../config/links';
import { scope } from '../config/scope';
import { percent, seconds, windowWords } from '../config/units';
import { ALERT } from './names';
import type { RuleSpec } from './rule-model';

/**
 * Client SLO: good and bad outcomes, read from the evidence table (src/core/evidence.ts): proven continuity and
 * proven loss; every other outcome is exposure, out of the SLI.
 */
export const CLIENT_SLO_GOOD = valuesWith('client_resume', 'proven_continuity') as readonly ResumeOutcome[];
export const CLIENT_SLO_BAD = valuesWith('client_resume', 'proven_loss') as readonly ResumeOutcome[];
/**
 * Out of the SLI: loud failures (rejected, failed), resumes whose ids cannot prove continuity (unverified) and
 * resumes with no frame before the verdict timeout (inconclusive: an idle session looks exactly like this).
 */
export const CLIENT_SLO_EXCLUDED: readonly ResumeOutcome[] = RESUME_OUTCOMES.filter(
  o => !CLIENT_SLO_GOOD.includes(o) && !CLIENT_SLO_BAD.includes(o),
);

export const CLIENT_LOSS_RATIO = (window: string) => `job:forkwatch_client_resume_loss:ratio_rate${window}`;
export const SERVER_LOSS_RATIO = (window: string) => `job:forkwatch_server_undelivered_loss:ratio_rate${window}`;

export const CLIENT_BURN_ALERT = ALERT.lossBudgetBurn;
export const SERVER_BURN_ALERT = ALERT.serverDeliveryBudgetBurn;

export interface Sli {
  /** bad-over-total ratio for one window. */
  ratio(window: string): string;
  /** good + bad events in a window: the traffic floor. */
  total(window: string): string;
}

/** An SLI whose bad and total events are each one counter: what Sloth, Pyrra and OpenSLO divide. */
interface CounterSli extends Sli {
  /** The raw selectors of the bad events and of all events (good + bad). */
  errors: string;
  all: string;
}

function clientSli(config: ForkwatchConfig): CounterSli {
  const s = scope(config);
  const resumes = METRICS.clientResumes.prometheusName;
  const bad = s.sel(resumes, `outcome=~"${CLIENT_SLO_BAD.join('|')}"`);
  const all = s.sel(resumes, `outcome=~"${[...CLIENT_SLO_GOOD, ...CLIENT_SLO_BAD].join('|')}"`);
  return {
    errors: bad,
    all,
    ratio: w => `sum by (${s.by()}) (rate(${bad}[${w}]))\n/\nsum by (${s.by()}) (rate(${all}[${w}]))\n`,
    total: w => `sum by (${s.by()}) (increase(${all}[${w}]))`,
  };
}

function serverSli(config: ForkwatchConfig): CounterSli {
  const s = scope(config);
  const lost = s.sel(
    METRICS.serverUndeliveredEvents.prometheusName,
    `reason=~"${SERVER_UNDELIVERED_LOSS_REASONS.join('|')}"`,
  );
  const written = s.sel(METRICS.serverEvents.prometheusName);
  const unreplayed = s.sel(METRICS.serverSharedUnreplayedEvents.prometheusName);
  const replayedUnpending = s.sel(METRICS.serverReplayedUnpendingEvents.prometheusName);
  const fleetUndelivered = s.sel(METRICS.serverFleetUndeliveredEvents.prometheusName);
  const lag = seconds(config.sharedStoreReplayLag);
  const sum = (expr: string) => `sum by (${s.by()}) (${expr})`;
  return {
    errors: lost,
    all: written,
    // With a shared store, what replicas stored and did not replay themselves is loss only as far as no replica
    // replayed it: the fleet balance, clamped at 0, adds to the loss each process judged alone. `or … * 0` keeps
    // the ratio when a job has no series of the newer counters (an older forkwatch).
    ratio: w => {
      const judged = sum(`increase(${lost}[${w}])`);
      const stored = sum(`increase(${unreplayed}[${w}])`);
      const elsewhere = sum(`increase(${replayedUnpending}[${seconds(w) + lag}s])`);
      // The fleet's delivery marks (issue 49): each event claimed by one replica, so the sum counts it once.
      const fleet = sum(`increase(${fleetUndelivered}[${w}])`);
      return (
        `(\n  ${judged}\n  +\n  (\n    clamp_min(\n      ${stored}\n      -\n      (${elsewhere} or ${stored} * 0),\n` +
        `      0\n    )\n    or\n    ${judged} * 0\n  )\n  +\n  (${fleet} or ${judged} * 0)\n)\n/\n` +
        `${sum(`increase(${written}[${w}])`)}\n`
      );
    },
    total: w => sum(`increase(${written}[${w}])`),
  };
}

export function sloRecordingRules(config: ForkwatchConfig): RuleSpec[] {
  const client = clientSli(config);
  const server = serverSli(config);
  const windows = sloWindows(config);
  return [
    ...windows.map((w, i) => ({
      record: CLIENT_LOSS_RATIO(w),
      expr: client.ratio(w),
      ...(i === 0
        ? {
            comment:
              `Client resume-loss SLI: of the 2xx resumes whose ids can prove continuity\n(outcome ` +
              `${[...CLIENT_SLO_GOOD, ...CLIENT_SLO_BAD].join('|')}), the share that forked.\n` +
              `${CLIENT_SLO_EXCLUDED.join(', ')} are on neither side. 0/0 (no resumes) gives no sample, so no alert.\n` +
              `One window per burn-rate alert window: ${windows.join(', ')}.`,
          }
        : {}),
    })),
    ...windows.map((w, i) => ({
      record: SERVER_LOSS_RATIO(w),
      expr: server.ratio(w),
      ...(i === 0
        ? {
            comment:
              `Server delivery SLI: of the events servers stored or wrote, the share that never reached a live client\n` +
              `(reason ${SERVER_UNDELIVERED_LOSS_REASONS.join('|')}); ${valuesWith('server_undelivered', 'exposure').join(' and ')} are exposure, not loss.\n` +
              `With a shared event store, events a replica stored and did not replay count only past what other\n` +
              `replicas replayed that was not pending on them (over the window plus ${config.sharedStoreReplayLag}).\n` +
              `With fleet delivery marks (fleetDelivery), the events no replica delivered, each claimed by one replica.`,
          }
        : {}),
    })),
  ];
}

export interface BurnText {
  summary: string;
  /** What the ratio is a share of, after "{{ $value | humanizePercentage }} of". */
  describe(w: BurnWindow): string;
  sloName: string;
}

export function burnAlerts(
  config: ForkwatchConfig,
  alert: string,
  objective: number,
  sli: Sli,
  ratio: (w: string) => string,
  text: BurnText,
): RuleSpec[] {
  const s = scope(config);
  const budget = errorBudget(objective);
  const on = `and on (${s.by()})`;
  return config.burnWindows.map(w => ({
    alert,
    expr:
      `${ratio(w.long)} > (${w.factor} * ${budget})\n${on}\n` +
      `${ratio(w.short)} > (${w.factor} * ${budget})\n${on}\n` +
      `${sli.total(w.long)} >= ${w.minEvents}\n`,
    for: w.for,
    labels: { severity: config.severities[w.severity], long: w.long, short: w.short },
    annotations: {
      summary: text.summary,
      description:
        `{{ $labels.job }}: {{ $value | humanizePercentage }} of ${text.describe(w)}, above ` +
        `${percent(w.factor * budget)} (${w.factor}x the ${percent(budget)} error budget of the ${percent(objective)} ` +
        `${text.sloName}) in the last ${windowWords(w.long)} and the last ${windowWords(w.short)}.`,
      ...alertLinks(config, alert),
    },
  }));
}

export function sloAlerts(config: ForkwatchConfig): { client: RuleSpec[]; server: RuleSpec[] } {
  const floors = config.burnWindows.map(w => `${w.long} >= ${w.minEvents}`).join(', ');
  const pages = config.burnWindows.filter(w => w.severity === 'page').map(w => `${w.factor}x`);
  const tickets = config.burnWindows.filter(w => w.severity === 'ticket').map(w => `${w.factor}x`);
  const client = burnAlerts(
    config,
    CLIENT_BURN_ALERT,
    config.clientResumeObjective,
    clientSli(config),
    CLIENT_LOSS_RATIO,
    {
      summary: 'Successful MCP stream resumes are silently losing events.',
      describe: w => `successful (2xx) resumes in the last ${windowWords(w.long)} forked`,
      sloName: 'SLO',
    },
  );
  const server = burnAlerts(
    config,
    SERVER_BURN_ALERT,
    config.serverDeliveryObjective,
    serverSli(config),
    SERVER_LOSS_RATIO,
    {
      summary: 'MCP servers are losing events before they reach live clients.',
      describe: w =>
        `the events servers wrote in the last ${windowWords(w.long)} never reached a live client (stream moved, no ` +
        'listener or dropped)',
      sloName: 'delivery SLO',
    },
  );
  (client[0] as RuleSpec).comment =
    `Loss hidden behind 200s. SLO: ${percent(config.clientResumeObjective)} of successful (2xx) resumes whose ids can ` +
    `prove continuity\ncontinue their event log. Multi-window, multi-burn-rate (SRE workbook ch. 5): ${pages.join(' and ')} ` +
    `page,\n${tickets.join(' and ')} open a ticket. Traffic floor: the long window must hold enough resumes that a single ` +
    `lossy one\nstays below the threshold (${floors});\nbelow it ForkwatchForksDetected still opens a ticket for every fork.`;
  (server[0] as RuleSpec).comment =
    `Events servers stored or wrote that never reached a live client. SLO: ${percent(config.serverDeliveryObjective)} ` +
    'of events written reach one.\nSame windows, factors and traffic floors (in events) as ' +
    'ForkwatchResumeLossBudgetBurn;\nabandoned events never count.';
  return { client, server };
}

/** The two SLOs as SLO tools (Sloth, Pyrra, OpenSLO) describe them: a name, an objective, bad and total events. */
export interface SloDefinition {
  name: string;
  alert: string;
  objective: number;
  description: string;
  errors: string;
  total: string;
  /** The labels each SLI is kept apart by (the rules' aggregation labels and job). */
  grouping: string[];
}

export function sloDefinitions(config: ForkwatchConfig): SloDefinition[] {
  const grouping = [...config.aggregationLabels, 'job'];
  const client = clientSli(config);
  const server = serverSli(config);
  return [
    {
      name: 'mcp-resume-loss',
      alert: CLIENT_BURN_ALERT,
      objective: config.clientResumeObjective,
      description:
        'Client resume loss: of the MCP stream resumes answered 2xx whose ids can prove continuity, the share ' +
        `that forked (outcome ${CLIENT_SLO_BAD.join('|')} of ${[...CLIENT_SLO_GOOD, ...CLIENT_SLO_BAD].join('|')}).`,
      errors: client.errors,
      total: client.all,
      grouping,
    },
    {
      name: 'mcp-server-delivery',
      alert: SERVER_BURN_ALERT,
      objective: config.serverDeliveryObjective,
      description:
        'Server delivery: of the events MCP servers stored or wrote, the share that never reached a live client ' +
        `(reason ${SERVER_UNDELIVERED_LOSS_REASONS.join('|')}). With a shared event store (sharedEventStore), events ` +
        "another replica may have replayed are weighed by forkwatch's own SLI records (the fleet balance), not here.",
      errors: server.errors,
      total: server.all,
      grouping,
    },
  ];
}
