/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The README's reference tables and commands agree with the code: names.ts, package.json and .ci/run. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ATTR, METRICS, SPAN, SPAN_EVENT } from '../src/shared/names';
import { PACKAGE_NAME, PACKAGE_VERSION } from '../src/shared/version';

const root = join(__dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

function tableRows(heading: string): string[][] {
  const section = readme.split(/^## /m).find(s => s.startsWith(heading));
  if (!section) throw new Error(`README has no "## ${heading}" section`);
  return section
    .split('\n')
    .filter(l => l.startsWith('| `'))
    .map(l =>
      l
        .split('|')
        .slice(1, -1)
        .map(c => c.trim()),
    );
}

describe('README', () => {
  test('the metrics table lists exactly the metrics of names.ts, with their types and labels', () => {
    const rows = tableRows('Metrics');
    const documented = new Map(rows.map(([name, type, labels]) => [name!.replace(/`/g, ''), { type, labels }]));
    expect([...documented.keys()].sort()).toEqual(
      Object.values(METRICS)
        .map(m => m.prometheusName)
        .sort(),
    );
    for (const spec of Object.values(METRICS)) {
      const doc = documented.get(spec.prometheusName)!;
      expect(doc.type).toBe(spec.kind);
      const labels = Object.keys(spec.labels);
      expect(doc.labels).toBe(labels.length ? labels.map(l => `\`${l}\``).join(', ') : '—');
    }
  });

  test('the span table names every span and span event', () => {
    const spansSection = readme.split(/^## /m).find(s => s.startsWith('Spans and span events'))!;
    for (const name of [...Object.values(SPAN), ...Object.values(SPAN_EVENT)])
      expect(spansSection).toContain(`\`${name}\``);
    for (const attr of [ATTR.cursor, ATTR.firstEventId, ATTR.sessionHash, ATTR.replayedEvents, ATTR.serverOutcome]) {
      expect(spansSection).toContain(`\`${attr}\``);
    }
  });

  test('every span attribute of names.ts has a row saying what it is', () => {
    const rows = tableRows('Spans and span events').filter(r => r.length === 3 && r[1] !== '');
    const documented = new Set(rows.map(r => r[0]!.replace(/`/g, '')));
    const spansSection = readme.split(/^## /m).find(s => s.startsWith('Spans and span events'))!;
    for (const attr of Object.values(ATTR)) {
      if (documented.has(attr)) continue;
      // Named but not emitted: the section must say so rather than leave it out.
      expect(spansSection, attr).toMatch(
        new RegExp(`\`${attr.replace(/\./g, '\\.')}\` is named in .* but not emitted`),
      );
    }
    expect(documented.size).toBeGreaterThanOrEqual(Object.values(ATTR).length - 1);
  });

  test('near the top, who sees which failure: client, server and probe, with inconclusive and unverified said plainly', () => {
    const headings = readme.split('\n').filter(l => l.startsWith('## '));
    expect(headings[0]).toBe('## Who sees what, and what to deploy where');
    const header = readme.split(/^## /m).find(s => s.startsWith('Who sees what'))!;
    const rows = header
      .split('\n')
      .filter(l => l.startsWith('| ') && !l.startsWith('| failure') && !l.startsWith('|---'))
      .map(l => l.split(' | ').map(c => c.replace(/^\| |\s*\|$/g, '').trim()));
    expect(header).toMatch(/\| failure \| client .* \| server .* \| probe .* \|/);
    expect(rows.length).toBeGreaterThanOrEqual(8);
    const sdkIds = rows.filter(r => r[0]!.includes('`_GET_stream_<ms>_<rand>`') || r[0]!.includes('live events'));
    expect(sdkIds.map(r => r[1])).toEqual([
      expect.stringContaining('`inconclusive`'),
      expect.stringContaining('`unverified`'),
    ]);
    for (const r of sdkIds) expect(r[2]).toContain('`unknown_cursor`');
    expect(header).toMatch(/`inconclusive` and `unverified` are never counted as forks/);
  });

  test('the Quickstart commands exist, and CI runs the README test command', () => {
    const quickstart = readme.split(/^## /m).find(s => s.startsWith('Quickstart'))!;
    expect(quickstart).toContain('npm ci && npm run lab');
    expect(quickstart).toContain('npm ci && npm test');
    expect(pkg.scripts.lab).toBeDefined();
    expect(pkg.scripts.test).toBeDefined();
    // CI runs the README's line as written; the Debian packages come from the test script itself.
    const ci = readFileSync(join(root, '.ci/run'), 'utf8');
    expect(ci).toMatch(/^npm ci && npm test$/m);
    expect(ci).not.toMatch(/\b(pkill|killall)\b/); // it stops nothing it did not start
    const provision = readFileSync(join(root, 'scripts/provision.mjs'), 'utf8');
    expect(provision).toMatch(/'install', '-y', '-qq', '--no-install-recommends', \.\.\.packages/);
    expect(provision).toContain("'prometheus-alertmanager': ['/usr/bin/prometheus-alertmanager', '/usr/bin/amtool']");
    expect(readFileSync(join(root, 'scripts/test.mjs'), 'utf8')).toContain(
      "import { provision } from './provision.mjs';",
    );
  });

  test('src/shared/version.ts follows package.json', () => {
    expect(PACKAGE_NAME).toBe(pkg.name);
    expect(PACKAGE_VERSION).toBe(pkg.version);
  });
});
