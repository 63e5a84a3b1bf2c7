/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The human-readable report: one line per condition, and under each failed one what the probe saw (`evidence:`) and
 * what to change (`fix:`); then the verdict and what it means. The report's strings are escaped already
 * (server-text.ts): every line starts with the probe's own words, so none the server wrote can read as a verdict.
 */
import { quoted } from './server-text';
import {
  CONDITIONS,
  CONDITION_TITLES,
  type ConditionResult,
  type ConditionStatus,
  type ProbeReport,
  type ProbeVerdict,
  STANDALONE_CONDITIONS,
  STANDALONE_CONDITION_TITLES,
} from './report';

const STATUS_WORD: Record<ConditionStatus, string> = {
  pass: 'PASS',
  fail: 'FAIL',
  not_tested: 'UNTESTED',
  not_applicable: 'N/A',
};

const VERDICT_LINE: Record<ProbeVerdict, string> = {
  resumable: 'RESUMABLE',
  not_resumable: 'NOT RESUMABLE',
  untestable: 'COULD NOT TEST',
  not_applicable: 'NOT APPLICABLE',
};

const MEANING: Record<ProbeVerdict, string> = {
  resumable: 'A client that loses a stream gets the missed events back, on any replica that answered.',
  not_resumable: 'Clients that lose a stream can lose messages; see the failed conditions above.',
  untestable: 'The probe could not reach a verdict; fix what is reported above and run it again.',
  not_applicable: 'There is no session stream to resume, so nothing can fork silently.',
};

export function renderText(report: ProbeReport): string {
  const lines: string[] = [];
  lines.push(`forkwatch probe ${report.target}`);
  const negotiated = report.protocol.negotiated ?? 'none';
  // A prefix is enough to find the session in server logs.
  const session = report.session.id === null ? 'no session' : `session ${quoted(report.session.id, 8)}`;
  lines.push(`  protocol ${negotiated} (asked ${report.protocol.requested}), ${session}`);
  if (report.cursor.real !== null) lines.push(`  cursor ${quoted(report.cursor.real, 80)}`);
  const width = Math.max(
    ...CONDITIONS.map(c => CONDITION_TITLES[c].length),
    ...STANDALONE_CONDITIONS.map(c => STANDALONE_CONDITION_TITLES[c].length),
  );
  const all = [...Object.values(report.conditions), ...Object.values(report.streams.standalone.conditions)];
  if (all.every(c => c.status === all[0]!.status && c.detail === all[0]!.detail)) {
    // The probe stopped before any stream (unreachable, 401, not MCP): say it once.
    lines.push('', `  ${STATUS_WORD[all[0]!.status].padEnd(8)} every condition  ${all[0]!.detail}`);
    for (const note of report.notes) lines.push(`  note: ${note}`);
    lines.push(
      '',
      `verdict: ${VERDICT_LINE[report.verdict]} (exit ${report.exitCode})`,
      `  ${MEANING[report.verdict]}`,
    );
    return `${lines.join('\n')}\n`;
  }
  lines.push('', `  request stream (POST responses): ${VERDICT_LINE[report.streams.request.verdict]}`);
  for (const name of CONDITIONS) lines.push(...conditionLines(report.conditions[name], CONDITION_TITLES[name], width));
  const standalone = report.streams.standalone;
  const trigger = standalone.trigger === null ? '' : ` (events via ${standalone.trigger})`;
  lines.push('', `  standalone GET stream${trigger}: ${VERDICT_LINE[standalone.verdict]}`);
  for (const name of STANDALONE_CONDITIONS)
    lines.push(...conditionLines(standalone.conditions[name], STANDALONE_CONDITION_TITLES[name], width));
  const forked = report.resumes.details.filter(d => d.outcome !== 'resumed');
  if (forked.length > 0) {
    lines.push('', '  resumes that did not resume:');
    for (const d of forked.slice(0, 10))
      lines.push(`    #${d.attempt} ${d.outcome} (${d.status ?? 'no answer'}): ${d.detail}`);
    if (forked.length > 10) lines.push(`    … ${forked.length - 10} more (see --json)`);
  }
  for (const note of [...report.notes, ...report.streams.standalone.notes]) lines.push(`  note: ${note}`);
  lines.push('', `verdict: ${VERDICT_LINE[report.verdict]} (exit ${report.exitCode})`, `  ${MEANING[report.verdict]}`);
  return `${lines.join('\n')}\n`;
}

/** What the evidence line keeps of a failure's evidence (its JSON, clipped). */
const EVIDENCE_MAX_CHARS = 240;

/** A condition's line; under a failure, its evidence and its one fix. */
function conditionLines(c: ConditionResult, title: string, width: number): string[] {
  const lines = [`  ${STATUS_WORD[c.status].padEnd(8)} ${title.padEnd(width)}  ${c.detail}`];
  if (c.status !== 'fail') return lines;
  const indent = ' '.repeat(11);
  // The details of the attempts in it repeat the line above.
  const evidence = JSON.stringify(c.evidence ?? {}, (key, value) => (key === 'detail' ? undefined : value));
  const shown = evidence.length > EVIDENCE_MAX_CHARS ? `${evidence.slice(0, EVIDENCE_MAX_CHARS)}…` : evidence;
  lines.push(`${indent}evidence: ${shown}`, `${indent}fix: ${c.fix ?? ''}`);
  return lines;
}
