/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// docs/matrix.md from the matrix's verdicts: the totals, a behaviour × fault table, every violation with what each
// side counted, the cells not run and why, and every cell.
import { BEHAVIOURS, FAULTS } from './cells.mjs';
import { EXPOSURE_SIGNALS, PAGE_SIGNALS } from './oracle.mjs';

const nonZero = signals =>
  Object.entries(signals)
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ') || '—';

/** What one side counted, in the oracle's words. */
export function countedBy(v, side) {
  const s = v.counted[side];
  return `page: ${nonZero(PAGE_SIGNALS[side](s))}; exposure: ${nonZero(EXPOSURE_SIGNALS[side](s))}`;
}

/**
 * The known cause of a violation, from what the cell was and what each side counted: the classes docs/matrix.md
 * explains (issue 45's gaps), so a new class shows as `unexplained`.
 */
export function cause(v) {
  const c = v.counted.client;
  const has = (s, re) => Object.entries(s).some(([k, n]) => n > 0 && re.test(k));
  const causes = [];
  if (v.violations.includes('c')) {
    // A stream with no cursor (no store, or cut before its first frame) that reconnects fresh is exposure on the
    // client (forkwatch_client_empty_reconnects_total{kind="fresh"}): such a cell missing (c) is unexplained.
    if (has(c, /outcome="resumed"/))
      causes.push(
        'c: split brain: the resume was proven continuous, later events went to a process the stream no longer reads',
      );
    else causes.push('c: unexplained');
  }
  if (v.violations.includes('b')) {
    if (v.proof.client && !v.clientPaged) {
      // A gap on a live stream seen dense is exposure by design (core/density.ts liveGapOf): a numbering that looks
      // dense per stream may be one counter for several streams, and a false page costs more than this one is worth.
      if (has(c, /forkwatch_client_live_gaps_total/))
        causes.push(
          'b(client): a live gap on a per-stream numbering, counted as exposure (client_live_gaps), not as proof',
        );
      else if (['go', 'rmcp', 'csharp'].includes(v.cell.ids))
        causes.push(`b(client): ${v.cell.ids} ids: the loss they prove not counted (codec)`);
      else if (has(c, /cursor_dropped_after_inconclusive|inconclusive/))
        causes.push(
          'b(client): cursor-less reconnect after an inconclusive resume not judged against the dropped cursor (evidence45)',
        );
      else causes.push('b(client): unexplained');
    }
    if (v.proof.server && !v.serverPaged)
      causes.push('b(server): lost events a living process sent, not counted by it');
    if (v.inFlight > 0 && !v.serverPaged && !v.serverExposure)
      causes.push('b(server): events a store-less process wrote to a connection that died, not even exposure on it');
  }
  if (v.violations.includes('a')) causes.push('a: false page');
  return causes.join('; ');
}

const totals = vs => ({
  cells: vs.length,
  lossy: vs.filter(v => v.lossy).length,
  paged: vs.filter(v => v.paged).length,
  exposure: vs.filter(v => v.clientExposure || v.serverExposure).length,
  falsePages: vs.filter(v => !v.lossy && v.paged).length,
  a: vs.filter(v => v.violations.includes('a')).length,
  b: vs.filter(v => v.violations.includes('b')).length,
  c: vs.filter(v => v.violations.includes('c')).length,
});

export function renderTable(verdicts, { combinations, ms, lanes, whole }) {
  const t = totals(verdicts);
  const equivalent = combinations.filter(c => c.reduction?.equivalentTo).length;
  const impossible = combinations.filter(c => c.reduction?.impossible).length;
  const lines = [
    '# The ground-truth scenario matrix',
    '',
    `Written by \`npm run matrix\` (lab/matrix/run.mjs${whole ? '' : ', a partial run'}): ${verdicts.length} cells ` +
      `of ${combinations.length} combinations (${equivalent} equivalent to a cell that runs, ${impossible} impossible), ` +
      `${(ms / 1000).toFixed(0)} s on ${lanes} lanes. Each cell runs the real SDK 1.32.2 client and servers on ` +
      "127.0.0.1 behind the lab's cutting proxy, with forkwatch on the real OpenTelemetry SDK on the client and on " +
      'every server process; the counts are the deltas of their Prometheus scrapes around the cell.',
    '',
    'Ground truth: a cell is *lossy* when a notification a server app sent never reached the app. *Paged*: a ' +
      'series a paging (critical) alert reads moved on the client or a server. *Exposure*: an exposure series moved (see lab/matrix/oracle.mjs). Invariants: (a) no page-read signal on a lossless run; (b) every loss provable from a side is counted by that side; (c) every lossy run is at least exposure on the client.',
    '',
    'A cell: the app connects through the proxy to its origin process and opens its standalone stream; the origin sends ' +
      'events (a tool call), the fault breaks the stream and routes the reconnect, the origin sends more while the app ' +
      "is away, the app reconnects as the SDK does (a resume with Last-Event-ID, or without after a frame-less one, typescript-sdk #2499); then the tickers stop, the servers' delivery window passes and the app pings every process it " +
      'reached, and again a window later, as a live app goes on talking (a request starts the window of events that went pending since the last one; the next one after it judges them). Many cells share one process pair (per deployment kind); a restart or a ' +
      "SIGKILL hands the origin's place to a spare started ahead. The id formats come from the event stores, which choose every id (lab/matrix/ids.mjs).",
    '',
    '| cells | lossy | paged | exposure | false pages | (a) violations | (b) violations | (c) violations |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    `| ${t.cells} | ${t.lossy} | ${t.paged} | ${t.exposure} | ${t.falsePages} | ${t.a} | ${t.b} | ${t.c} |`,
    '',
    '## By behaviour and fault',
    '',
    'Each entry: cells / lossy / paged / violations (a, b, c).',
    '',
    `| behaviour | ${FAULTS.join(' | ')} |`,
    `|---|${FAULTS.map(() => '---').join('|')}|`,
  ];
  for (const behaviour of BEHAVIOURS) {
    const row = FAULTS.map(fault => {
      const vs = verdicts.filter(v => v.cell.behaviour === behaviour && v.cell.fault === fault);
      if (!vs.length) return '·';
      const x = totals(vs);
      return `${x.cells}/${x.lossy}/${x.paged}/${x.a},${x.b},${x.c}`;
    });
    lines.push(`| ${behaviour} | ${row.join(' | ')} |`);
  }
  const violations = verdicts.filter(v => v.violations.length);
  lines.push('', '## Violations', '');
  if (!violations.length) lines.push('None.');
  else {
    const causes = new Map();
    for (const v of violations) for (const k of cause(v).split('; ')) causes.set(k, (causes.get(k) ?? 0) + 1);
    lines.push('| cause | cells |', '|---|---:|', ...[...causes].map(([k, n]) => `| ${k} | ${n} |`), '');
    lines.push(
      '| cell | invariant | cause | lost/sent | proof | client counted | servers counted |',
      '|---|---|---|---|---|---|---|',
    );
    for (const v of violations)
      lines.push(
        `| ${v.name} | ${v.violations.join(', ')} | ${cause(v)} | ${v.lost}/${v.sent} | ${[v.proof.client && `client: ${v.proof.client}`, v.proof.server && `server: ${v.proof.server}`].filter(Boolean).join('; ') || '—'} | ${countedBy(v, 'client')} | ${countedBy(v, 'server')} |`,
      );
  }
  lines.push('', '## Cells not run', '', '| rule | combinations |', '|---|---:|');
  const rules = new Map();
  for (const c of combinations.filter(c => c.reduction)) {
    const why = c.reduction.why ?? c.reduction.impossible;
    rules.set(why, (rules.get(why) ?? 0) + 1);
  }
  for (const [why, n] of rules) lines.push(`| ${why} | ${n} |`);
  lines.push('', '## Every cell', '', '| cell | lost/sent | client | servers | violations |', '|---|---:|---|---|---|');
  for (const v of verdicts)
    lines.push(
      `| ${v.name} | ${v.lost}/${v.sent} | ${v.clientPaged ? 'page' : v.clientExposure ? 'exposure' : '—'} | ${v.serverPaged ? 'page' : v.serverExposure ? 'exposure' : '—'} | ${v.violations.join(', ') || '—'}${v.error ? ` (error: ${v.error})` : ''} |`,
    );
  return `${lines.join('\n')}\n`;
}
