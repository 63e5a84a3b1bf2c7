/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The drill's closing report: each stream, what was sent and what arrived, and what forkwatch counted per side. */
import { type EvidenceSeries, evidenceSeries } from '../../shared/names';
import type { SideReport } from './metrics';
import type { DrillOptions } from './options';
import type { DrillState, StreamRecord } from './proxy';

/** A series that went up during the drill and what it is evidence of (src/core/evidence.ts). */
export interface CountedSeries {
  side: 'client' | 'server';
  url: string;
  series: string;
  increase: number;
}

export interface DrillReport {
  url: string;
  upstream: string;
  rerouteUpstream: string | undefined;
  resume: DrillOptions['resume'];
  streamsCut: DrillOptions['streams'];
  cutAfter: number;
  stoppedBy: string;
  requests: number;
  cuts: number;
  resumesFaulted: number;
  streams: StreamRecord[];
  streamsLeftOut: number;
  sides: SideReport[];
  /** What moved, by evidence: proven loss (a fork, counted events) and exposure (a gap nobody can prove). */
  counted: { provenLoss: CountedSeries[]; exposure: CountedSeries[] };
}

/** The value of `label` in a series name `name{a="x",…}`. */
function labelValue(series: string, label: string): string | undefined {
  const m = new RegExp(`[{,]${label}="([^"]*)"`).exec(series);
  return m?.[1];
}

function matches(series: string, evidence: EvidenceSeries): boolean {
  const name = series.split('{')[0];
  if (name !== evidence.prometheusName) return false;
  return evidence.label === undefined || labelValue(series, evidence.label) === evidence.value;
}

/** The series of the sides that went up and are evidence of loss or exposure. */
export function countedSeries(sides: readonly SideReport[]): DrillReport['counted'] {
  const pick = (evidence: EvidenceSeries[]) =>
    sides.flatMap(side =>
      side.changes
        .filter(c => c.after > (c.before ?? 0) && evidence.some(e => matches(c.series, e)))
        .map(c => ({ side: side.side, url: side.url, series: c.series, increase: c.after - (c.before ?? 0) })),
    );
  return { provenLoss: pick(evidenceSeries('proven_loss')), exposure: pick(evidenceSeries('exposure')) };
}

export function drillReport(
  options: DrillOptions,
  url: string,
  state: DrillState,
  sides: SideReport[],
  stoppedBy: string,
): DrillReport {
  return {
    url,
    upstream: options.upstream.href,
    rerouteUpstream: options.rerouteUpstream?.href,
    resume: options.resume,
    streamsCut: options.streams,
    cutAfter: options.cutAfter,
    stoppedBy,
    requests: state.requests,
    cuts: state.cuts,
    resumesFaulted: state.resumesFaulted,
    streams: state.records,
    streamsLeftOut: state.recordsLeftOut,
    sides,
    counted: countedSeries(sides),
  };
}

/** A series as the text shows it: without the labels every forkwatch series carries (transport, OTel scope). */
function shortSeries(series: string): string {
  return series
    .replace(/(?<=[{,])(transport="streamable_http"|otel_scope_name="[^"]*"|otel_scope_version="[^"]*"),?/g, '')
    .replace(/,\}$/, '}')
    .replace(/\{\}$/, '');
}

/** No stream was cut: which kind carried enough events, so the user knows which --streams to give. */
function noCutHint(report: DrillReport): string[] {
  const most = (kind: StreamRecord['kind']) =>
    Math.max(0, ...report.streams.filter(r => r.kind === kind).map(r => r.framesSent));
  const get = most('get');
  const post = most('post');
  const lines = [
    `nothing was cut: no ${report.streamsCut === 'all' ? 'SSE' : report.streamsCut.toUpperCase()} stream carried ${report.cutAfter} events through the drill`,
  ];
  if (report.streamsCut === 'get' && post >= report.cutAfter)
    lines.push(
      `  your server sends its events on POST response streams (up to ${post} events each; GET streams ${get}): run the drill with --streams post`,
    );
  else lines.push('  have your client make the server send more events, or lower --cut-after');
  return lines;
}

function verdictLines(report: DrillReport): string[] {
  const line = (c: CountedSeries) => `  ${c.side} (${c.url}): ${shortSeries(c.series)} +${c.increase}`;
  const { provenLoss, exposure } = report.counted;
  const lines = ['', 'what forkwatch counted on your app:'];
  if (provenLoss.length) lines.push('proven loss (a fork: events lost, it pages):', ...provenLoss.map(line));
  if (exposure.length)
    lines.push('exposure (a resume nobody can prove continuous; a ticket, never a page):', ...exposure.map(line));
  if (!provenLoss.length && !exposure.length)
    lines.push(report.sides.length ? '  no loss and no exposure' : '  nothing: no side was scraped');
  return lines;
}

function streamLine(r: StreamRecord): string {
  const request = `${r.kind === 'resume' ? `GET Last-Event-ID ${r.lastEventId}` : r.method}${r.session ? ` · session ${r.session.slice(0, 8)}` : ''}`;
  const ids = r.lastIds.length ? `${r.firstIds.join(' ')} … ${r.lastIds.join(' ')}` : r.firstIds.join(' ');
  const fault = r.fault ? ` [${r.fault}]` : '';
  return `  #${r.n} ${request} → ${r.to} ${r.status ?? '—'}${fault}: ${r.framesSent} frames sent, ${r.framesArrived} arrived${ids ? ` (ids ${ids})` : ''}; ${r.ended}`;
}

export function renderDrillReport(report: DrillReport): string {
  const lines = [
    `forkwatch drill: stopped (${report.stoppedBy}) after ${report.requests} requests, ${report.cuts} cut, ${report.resumesFaulted} resumes of cut streams`,
    '',
    'streams (what the upstream sent, what reached the client):',
    ...(report.streams.length ? report.streams.map(streamLine) : ['  none: no SSE stream went through the drill']),
  ];
  if (report.streamsLeftOut) lines.push(`  … and ${report.streamsLeftOut} more, not kept`);
  if (report.cuts === 0) lines.push('', ...noCutHint(report));
  for (const side of report.sides) {
    lines.push('', `forkwatch on the ${side.side} (${side.url}):`);
    if (side.error) lines.push(`  could not scrape: ${side.error}`);
    else if (!side.changes.length) lines.push('  no forkwatch_* series moved');
    for (const c of side.changes) lines.push(`  ${shortSeries(c.series)}  ${c.before ?? '(new)'} → ${c.after}`);
  }
  if (!report.sides.length)
    lines.push('', 'no side scraped: give --client-metrics and --server-metrics to see what forkwatch counted');
  lines.push(...verdictLines(report));
  lines.push(
    '',
    `The drill no longer listens: your client's requests to ${report.url} fail from now on; stop it, or point it back at your server.`,
  );
  return `${lines.join('\n')}\n`;
}
