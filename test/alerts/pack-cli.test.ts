/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * `forkwatch pack` as a user runs it: the built command (build/src/cli/main.js, which loads the bundled pack in
 * build/pack), in a folder of the user's, with relative paths. Config problems come out one line each (exit 1,
 * nothing written), a selector that is not PromQL is refused, the Collector config keeps a renamed cluster label,
 * and the PodMonitor selects the Deployment of docs/production.md.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { afterAll, describe, expect, test } from 'vitest';
import { renderPack } from '../../pack/compose';
import { resolveConfig } from '../../pack/config/resolve';

const ROOT = join(__dirname, '../..');
const MAIN = join(ROOT, 'build/src/cli/main.js');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function userDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'forkwatch-pack-cli-'));
  dirs.push(dir);
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  return dir;
}
const pack = (cwd: string, ...args: string[]) => {
  const res = spawnSync(process.execPath, [MAIN, 'pack', ...args], { cwd, encoding: 'utf8' });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr, lines: res.stderr.split('\n').filter(Boolean) };
};
const listFiles = (dir: string): string[] =>
  readdirSync(dir).flatMap(name => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? listFiles(path) : [path];
  });

describe('forkwatch pack', () => {
  test('renders every output from a JSON config, paths relative to where it runs', () => {
    const user = { selector: 'job=~"mcp-.*"', grafanaUrl: 'https://grafana.example.org' };
    const dir = userDir({ 'my.json': JSON.stringify(user) });
    const res = pack(dir, '--config', 'my.json', '--out', 'rendered');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toBe('');
    const expected = renderPack(resolveConfig(user));
    const written = listFiles(join(dir, 'rendered')).map(p => relative(join(dir, 'rendered'), p));
    expect(written.sort()).toEqual([...expected.keys()].sort());
    for (const [name, content] of expected)
      expect(readFileSync(join(dir, 'rendered', name), 'utf8'), name).toBe(content);
    expect(res.stdout.match(/^wrote /gm)).toHaveLength(expected.size);
    for (const name of [
      'sloth/forkwatch.slos.yaml',
      'pyrra/servicelevelobjectives.yaml',
      'openslo/forkwatch.openslo.yaml',
      'mixin/mixin.libsonnet',
    ])
      expect(written).toContain(name);
  });

  test('every config problem is one line naming the file and the key; exit 1 and nothing written', () => {
    const dir = userDir({
      'bad.json': JSON.stringify({
        aggregationLabels: 'cluster',
        selecter: 'job="x"',
        kubernetes: { namespace: 7 },
        alerts: { ForkwatchForksDetected: { windw: '5m' } },
      }),
    });
    const res = pack(dir, '--config', 'bad.json', '--out', 'out');
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    const at = `forkwatch pack: ${join(dir, 'bad.json')}:`;
    expect(res.lines).toEqual([
      `${at} unknown config keys: selecter, alerts.ForkwatchForksDetected.windw`,
      `${at} aggregationLabels: expected an array, got a string`,
      `${at} kubernetes.namespace: expected a string, got a number`,
    ]);
    expect(res.stderr).not.toMatch(/TypeError|\n\s+at /);
    expect(existsSync(join(dir, 'out'))).toBe(false);
  });

  test('a selector that is not PromQL, a broken JSON file and a missing file: one line each', () => {
    const dir = userDir({
      'selector.json': JSON.stringify({ selector: 'job=~"mcp-.*' }),
      'braces.json': JSON.stringify({ selector: '{job="mcp"}' }),
      'syntax.json': '{ "selector": "job=\\"x\\"", }',
    });
    const selector = pack(dir, '--config', 'selector.json');
    expect(selector.code).toBe(1);
    expect(selector.lines).toHaveLength(1);
    expect(selector.lines[0]).toMatch(/selector "job=~\\"mcp-\.\*": not valid PromQL label matchers at character \d+/);
    expect(pack(dir, '--config', 'braces.json').lines).toEqual([
      `forkwatch pack: ${join(dir, 'braces.json')}: selector: label matchers without braces, e.g. job=~"mcp-.*"`,
    ]);
    const syntax = pack(dir, '--config', 'syntax.json');
    expect(syntax.code).toBe(1);
    expect(syntax.lines).toHaveLength(1);
    expect(syntax.lines[0]).toContain(`${join(dir, 'syntax.json')} is not valid JSON`);
    expect(pack(dir, '--config', 'nowhere.json').lines).toEqual([
      `forkwatch pack: cannot read ${join(dir, 'nowhere.json')}: ENOENT`,
    ]);
    expect(existsSync(join(dir, 'forkwatch-pack'))).toBe(false);
  });

  test('--help, and usage errors (exit 64)', () => {
    const dir = userDir({});
    const help = pack(dir, '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: forkwatch pack [--config <file.json>] [--out <dir>]');
    expect(pack(dir, '--confg', 'x.json').code).toBe(64);
    expect(pack(dir, '--config').code).toBe(64);
    const main = spawnSync(process.execPath, [MAIN, '--help'], { encoding: 'utf8' });
    expect(main.stdout).toMatch(/^ {2}pack {10}render the alerting pack/m);
  });
});

describe('the Collector and PodMonitor outputs follow the config and the README', () => {
  test('a renamed cluster label keeps the cluster attribute; a label with no attribute is a warning line', () => {
    const dir = userDir({
      'renamed.json': JSON.stringify({ aggregationLabels: ['k8s_cluster', 'namespace'], clusterLabel: 'k8s_cluster' }),
      'unmapped.json': JSON.stringify({ aggregationLabels: ['cluster', 'team'] }),
    });
    const renamed = pack(dir, '--config', 'renamed.json', '--out', 'a');
    expect(renamed.code, renamed.stderr).toBe(0);
    expect(renamed.stderr).toBe('');
    const collector = parse(readFileSync(join(dir, 'a/otel-collector/config.yaml'), 'utf8'));
    expect(collector.processors['transform/forkwatch'].metric_statements[0].statements).toEqual([
      'set(datapoint.attributes["k8s_cluster"], resource.attributes["k8s.cluster.name"]) where resource.attributes["k8s.cluster.name"] != nil',
      'set(datapoint.attributes["namespace"], resource.attributes["k8s.namespace.name"]) where resource.attributes["k8s.namespace.name"] != nil',
    ]);
    const unmapped = pack(dir, '--config', 'unmapped.json', '--out', 'b');
    expect(unmapped.code).toBe(0);
    expect(unmapped.lines).toEqual([
      'forkwatch pack: warning: otelCollector.resourceAttributes names no resource attribute for the aggregation label team: the Collector config leaves it unset (add e.g. "team": "k8s.namespace.name")',
    ]);
  });

  test("the PodMonitor selects the production docs' Deployment, scrapes its metrics port and names the job from its label", () => {
    const readme = readFileSync(join(ROOT, 'docs/production.md'), 'utf8');
    const block = [...readme.matchAll(/```yaml\n([\s\S]*?)```/g)]
      .map(m => m[1] as string)
      .find(b => /kind: Deployment/.test(b));
    const deployment = parseAllDocuments(block ?? '')
      .map(d => d.toJS())
      .find(d => d?.kind === 'Deployment');
    const podLabels = deployment.spec.template.metadata.labels as Record<string, string>;
    const ports = deployment.spec.template.spec.containers.flatMap(
      (c: { ports?: { name: string }[] }) => c.ports ?? [],
    );
    const monitor = parse(renderPack(resolveConfig({})).get('kubernetes/podmonitor.yaml') ?? '');
    expect(Object.entries(monitor.spec.selector.matchLabels).length).toBeGreaterThan(0);
    for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels)) expect(podLabels[k], k).toBe(v);
    expect(ports.map((p: { name: string }) => p.name)).toContain(monitor.spec.podMetricsEndpoints[0].port);
    expect(podLabels[monitor.spec.jobLabel]).toBe('mcp-gateway');
  });
});
