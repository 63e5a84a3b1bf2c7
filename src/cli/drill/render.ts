/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The drill's closing report: each stream, what was sent and what arrived, and what forkwatch counted per side. */
import type { SideReport } from './metrics';
import type { DrillOptions } from './options';
import type { DrillState, StreamRecord } from './proxy';

export interface DrillReport {
  url: string;
  upstream: string;
  rerouteUpstream: string | undefined;
  resume: DrillOptions['resume'];
  stoppedBy: string;
  requests: number;
  cuts: number;
  resumesFaulted: number;
  streams: StreamRecord[];
  streamsLeftOut: number;
  sides: SideReport[];
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
    stoppedBy,
    requests: state.requests,
    cuts: state.cuts,
    resumesFaulted: state.resumesFaulted,
    streams: state.records,
    streamsLeftOut: state.recordsLeftOut,
    sides,
  };
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
  for (const side of report.sides) {
    lines.push('', `forkwatch on the ${side.side} (${side.url}):`);
    if (side.error) lines.push(`  could not scrape: ${side.error}`);
    else if (!side.changes.length) lines.push('  no forkwatch_* series moved');
    for (const c of side.changes) lines.push(`  ${c.series}  ${c.before ?? '(new)'} → ${c.after}`);
  }
  if (!report.sides.length)
    lines.push('', 'no side scraped: give --client-metrics and --server-metrics to see what forkwatch counted');
  return `${lines.join('\n')}\n`;
}
