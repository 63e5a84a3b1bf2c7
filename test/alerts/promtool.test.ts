/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * promtool on the real rule files: `check rules`, `test rules` on every unit test in alerts/tests, a coverage check
 * (every alert has a firing case with exact labels and annotations, and a silent one), and mutations proving the unit
 * tests would notice: an alert that never fires, a dropped `for`, a dropped counter-born-at-1 guard, a dropped
 * traffic floor, a blind-target alert that pages an idle process or ignores MCP traffic forkwatch cannot judge.
 *
 * Prometheus evaluates rule groups independently, so an alert may read a recording rule's value from this
 * evaluation or from the previous one. promtool without `group_eval_order` picks the group order at random (Go map
 * order), which once let a mutant survive in CI only. Every unit test and every mutant therefore runs under both
 * orders: recording rules first, and alert rules first.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseDocument } from 'yaml';
import { describe, expect, test } from 'vitest';
import { BIN, runTool } from '../support/prometheus';

const ALERTS_DIR = join(__dirname, '../../alerts');
const RULE_FILES = readdirSync(ALERTS_DIR)
  .filter(f => /\.rules\.ya?ml$/.test(f))
  .sort();
const TEST_FILES = readdirSync(join(ALERTS_DIR, 'tests'))
  .filter(f => /\.ya?ml$/.test(f))
  .sort();
const ALERT_FILE = 'forkwatch-alerts.rules.yml';

interface AlertRule {
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const alertRules: AlertRule[] = (
  parse(readFileSync(join(ALERTS_DIR, ALERT_FILE), 'utf8')) as { groups: { rules: AlertRule[] }[] }
).groups
  .flatMap(g => g.rules)
  .filter(r => r.alert);
const ALERT_NAMES = [...new Set(alertRules.map(r => r.alert as string))].sort();

interface UnitTests {
  rule_files: string[];
  tests: {
    name?: string;
    alert_rule_test?: {
      alertname: string;
      eval_time: string;
      exp_alerts?: { exp_labels?: Record<string, string>; exp_annotations?: Record<string, string> }[];
    }[];
  }[];
}
const unitTests = new Map(
  TEST_FILES.map(f => [f, parse(readFileSync(join(ALERTS_DIR, 'tests', f), 'utf8')) as UnitTests]),
);
const testFilesFor = (alert: string) =>
  TEST_FILES.filter(f => unitTests.get(f)!.tests.some(t => t.alert_rule_test?.some(a => a.alertname === alert)));

/** Alerting and recording rule group names, read from the rule files. */
function ruleGroupNames(): { alerting: string[]; recording: string[] } {
  const out = { alerting: [] as string[], recording: [] as string[] };
  for (const f of RULE_FILES) {
    const doc = parse(readFileSync(join(ALERTS_DIR, f), 'utf8')) as {
      groups: { name: string; rules: { alert?: string }[] }[];
    };
    for (const g of doc.groups) (g.rules.some(r => r.alert) ? out.alerting : out.recording).push(g.name);
  }
  return out;
}
const EVAL_ORDERS = (() => {
  const { alerting, recording } = ruleGroupNames();
  return { 'recording rules first': [...recording, ...alerting], 'alert rules first': [...alerting, ...recording] };
})();
type EvalOrderName = keyof typeof EVAL_ORDERS;
const EVAL_ORDER_NAMES = Object.keys(EVAL_ORDERS) as EvalOrderName[];

/**
 * promtool replays hours of rule evaluations (the burn-rate files evaluate every rule each minute for 5 hours): one
 * file alone takes 10-25 s of CPU on the shared 2-core machine, and five run at once. This bounds a CPU-bound run,
 * it waits for nothing.
 */
const PROMTOOL_TIMEOUT = { timeout: 180_000 };

/**
 * Runs unit test files of `alertsDir`/tests with promtool, each rewritten beside itself with `group_eval_order`
 * set to `order`, and returns promtool's exit code and output.
 */
async function runUnitTests(
  alertsDir: string,
  files: string[],
  order: EvalOrderName,
): Promise<{ code: number | null; out: string }> {
  const testsDir = join(alertsDir, 'tests');
  const dir = await mkdtemp(join(testsDir, '.order-'));
  try {
    const variants: string[] = [];
    for (const file of files) {
      const doc = parseDocument(await readFile(join(testsDir, file), 'utf8'));
      doc.set(
        'rule_files',
        (doc.toJS().rule_files as string[]).map(r => join('..', r)),
      );
      doc.set('group_eval_order', EVAL_ORDERS[order]);
      await writeFile(join(dir, file), doc.toString());
      variants.push(file);
    }
    const res = await runTool(BIN.promtool, ['test', 'rules', ...variants], {
      cwd: dir,
      timeoutMs: PROMTOOL_TIMEOUT.timeout - 10_000,
    });
    // A killed promtool has no exit code: it must not count as a unit test that caught a mutant.
    if (res.code === null) throw new Error(`promtool was killed before it finished ${variants.join(', ')}`);
    return { code: res.code, out: res.stdout + res.stderr };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('promtool check rules', () => {
  test('both rule files are valid and lint-clean (duplicate rules included)', async () => {
    expect(RULE_FILES).toEqual(['forkwatch-alerts.rules.yml', 'forkwatch-recording.rules.yml']);
    const res = await runTool(BIN.promtool, ['check', 'rules', ...RULE_FILES.map(f => join(ALERTS_DIR, f))]);
    expect(res.code, res.stdout + res.stderr).toBe(0);
    expect(res.stdout.match(/SUCCESS: \d+ rules found/g)).toHaveLength(RULE_FILES.length);
  });
});

describe('promtool test rules', PROMTOOL_TIMEOUT, () => {
  test.concurrent.each(TEST_FILES.flatMap(f => EVAL_ORDER_NAMES.map(o => [f, o] as const)))(
    '%s passes with %s',
    async (file, order) => {
      // On a copy: the `.order-*` folder runUnitTests writes would otherwise sit in alerts/tests while other files,
      // run at the same time, list it (config-render.test.ts read it as a unit test file and failed with EISDIR).
      const dir = await mkdtemp(join(tmpdir(), 'forkwatch-rules-'));
      const res = await cp(ALERTS_DIR, dir, { recursive: true })
        .then(() => runUnitTests(dir, [file], order))
        .finally(() => rm(dir, { recursive: true, force: true }));
      expect(res.code, res.out).toBe(0);
      expect(res.out).toContain('SUCCESS');
    },
  );

  test('the two evaluation orders name every rule group once', () => {
    const groups = ruleGroupNames();
    expect(groups.alerting.length).toBeGreaterThan(0);
    expect(groups.recording.length).toBeGreaterThan(0);
    for (const name of EVAL_ORDER_NAMES)
      expect([...EVAL_ORDERS[name]].sort()).toEqual([...groups.alerting, ...groups.recording].sort());
  });

  test('every unit test file loads both rule files', () => {
    for (const [file, t] of unitTests) {
      expect([...t.rule_files].sort(), file).toEqual(RULE_FILES.map(f => `../${f}`).sort());
    }
  });

  test.each(ALERT_NAMES)('%s: a firing case with exact labels and all annotations, and a silent case', alert => {
    const cases = [...unitTests.values()]
      .flatMap(t => t.tests.flatMap(c => c.alert_rule_test ?? []))
      .filter(a => a.alertname === alert);
    const firing = cases.filter(c => (c.exp_alerts ?? []).length > 0);
    const silent = cases.filter(c => (c.exp_alerts ?? []).length === 0);
    expect(firing.length, 'firing cases').toBeGreaterThan(0);
    expect(silent.length, 'silent cases').toBeGreaterThan(0);
    const ruleAnnotations = new Set(
      alertRules.filter(r => r.alert === alert).flatMap(r => Object.keys(r.annotations ?? {})),
    );
    // No dashboard_url: the default config names no Grafana host (pack/config/links.ts).
    expect([...ruleAnnotations].sort()).toEqual(['description', 'runbook_url', 'summary']);
    for (const c of firing) {
      for (const e of c.exp_alerts!) {
        expect(Object.keys(e.exp_annotations ?? {}).sort(), `${alert} at ${c.eval_time}`).toEqual(
          [...ruleAnnotations].sort(),
        );
        expect(e.exp_labels?.severity, `${alert} at ${c.eval_time}`).toMatch(/^(critical|warning)$/);
      }
    }
  });
});

/** Copies alerts/ to a temp dir, applies `mutate` to the alert rules, runs the given unit test files there. */
async function runMutated(
  files: string[],
  order: EvalOrderName,
  mutate: (rule: AlertRule) => Partial<AlertRule> | undefined,
  mutateRecording?: (text: string) => string,
): Promise<{ code: number | null; out: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'forkwatch-mutant-'));
  try {
    await cp(ALERTS_DIR, dir, { recursive: true });
    const doc = parseDocument(await readFile(join(ALERTS_DIR, ALERT_FILE), 'utf8'));
    const groups = doc.toJS().groups as { rules: AlertRule[] }[];
    let changed = 0;
    groups.forEach((g, gi) => {
      g.rules.forEach((r, ri) => {
        const patch = r.alert ? mutate(r) : undefined;
        if (!patch) return;
        for (const [k, v] of Object.entries(patch)) doc.setIn(['groups', gi, 'rules', ri, k], v);
        changed++;
      });
    });
    const recordingFile = join(ALERTS_DIR, 'forkwatch-recording.rules.yml');
    const recording = await readFile(recordingFile, 'utf8');
    const mutatedRecording = mutateRecording ? mutateRecording(recording) : recording;
    if (changed === 0 && mutatedRecording === recording) throw new Error('mutation changed nothing');
    await writeFile(join(dir, ALERT_FILE), doc.toString());
    await writeFile(join(dir, 'forkwatch-recording.rules.yml'), mutatedRecording);
    // A mutant is caught when any unit test fails: run the files one by one, smallest first, and stop at the first
    // failure (on a loaded 2-core machine the long burn-rate files alone take tens of seconds).
    const bySize = [...files].sort(
      (a, b) => statSync(join(ALERTS_DIR, 'tests', a)).size - statSync(join(ALERTS_DIR, 'tests', b)).size,
    );
    let last = { code: 0 as number | null, out: '' };
    for (const file of bySize) {
      last = await runUnitTests(dir, [file], order);
      if (last.code !== 0) return last;
    }
    return last;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('the unit tests catch broken rules (mutations)', PROMTOOL_TIMEOUT, () => {
  const eachOrder = <T extends readonly unknown[]>(cases: readonly T[]) =>
    cases.flatMap(c => EVAL_ORDER_NAMES.map(o => [...c, o] as const));

  test.concurrent.each(eachOrder(ALERT_NAMES.map(a => [a] as const)))(
    '%s never firing fails its unit tests, %s',
    async (alert, order) => {
      const res = await runMutated(testFilesFor(alert), order, r =>
        r.alert === alert ? { expr: 'vector(1) < 0' } : undefined,
      );
      expect(res.code, res.out).not.toBe(0);
    },
  );

  test.concurrent.each(eachOrder(ALERT_NAMES.map(a => [a] as const)))(
    '%s without its `for` fails its unit tests, %s',
    async (alert, order) => {
      const res = await runMutated(testFilesFor(alert), order, r => (r.alert === alert ? { for: '0s' } : undefined));
      expect(res.code, res.out).not.toBe(0);
    },
  );

  test.concurrent.each(
    eachOrder([
      ['ForkwatchForksDetected', 'forkwatch_client_forks_total', 'cluster, namespace, job, transport, reason'],
      ['ForkwatchDuplicateDeliveries', 'forkwatch_client_duplicate_events_total', 'cluster, namespace, job, transport'],
      [
        'ForkwatchClientExchangesReissued',
        'forkwatch_client_reissues_total{outcome="reissued"}',
        'cluster, namespace, job',
      ],
      [
        'ForkwatchClientListenStreamsDropped',
        'forkwatch_client_listen_streams_total{outcome="dropped"}',
        'cluster, namespace, job',
      ],
      ['ForkwatchServerOrphanedTasks', 'forkwatch_server_orphaned_tasks_total', 'cluster, namespace, job, instance'],
    ] as const),
  )('%s without the counter-born-at-1 guard fails its unit tests (%s, %s), %s', async (alert, metric, by, order) => {
    const plain = `sum by (${by}) (increase(${metric}[10m])) > 0`;
    const res = await runMutated(testFilesFor(alert), order, r => (r.alert === alert ? { expr: plain } : undefined));
    expect(res.code, res.out).not.toBe(0);
    expect(res.out).toMatch(/born-at-1/);
  });

  test.concurrent.each(
    eachOrder([
      ['ForkwatchResumeLossBudgetBurn'],
      ['ForkwatchServerDeliveryBudgetBurn'],
      ['ForkwatchServerEventsWithoutListener'],
      ['ForkwatchClientResultsLost'],
    ] as const),
  )('%s without its traffic floor fails its unit tests, %s', async (alert, order) => {
    const floor = /\s*and on \([^)]*\)\s*sum by \([^)]*\) \(increase[^\n]*/;
    const res = await runMutated(testFilesFor(alert), order, r => {
      if (r.alert !== alert) return undefined;
      expect(r.expr).toMatch(floor);
      return { expr: r.expr.replace(floor, '') };
    });
    expect(res.code, res.out).not.toBe(0);
    expect(res.out).toMatch(/low traffic/);
  });

  test.concurrent.each(
    eachOrder([
      ['ForkwatchServerResumesRejected'],
      ['ForkwatchServerUnknownCursors'],
      ['ForkwatchResumesRejected'],
    ] as const),
  )('%s without its resume floor fails its unit tests, %s', async (alert, order) => {
    const floor = /\s*and on \([^)]*\)\s*sum by \([^)]*\) \(job[^\n]*\* \d+ >= \d+/;
    const res = await runMutated(testFilesFor(alert), order, r => {
      if (r.alert !== alert) return undefined;
      expect(r.expr).toMatch(floor);
      return { expr: r.expr.replace(floor, '') };
    });
    expect(res.code, res.out).not.toBe(0);
    expect(res.out).toMatch(/traffic floor/);
  });

  test.concurrent.each(
    eachOrder([
      ['ForkwatchServerResumesRejected', 'rejected'],
      ['ForkwatchServerUnknownCursors', 'unknown_cursor'],
    ] as const),
  )("%s counting the probe's deliberate refusals as %s fails its unit tests, %s", async (alert, outcome, order) => {
    const res = await runMutated(testFilesFor(alert), order, r =>
      r.alert === alert
        ? {
            expr: r.expr
              .replace(`{outcome="${outcome}"}`, `{outcome=~"${outcome}|probe_rejected"}`)
              .replaceAll('{outcome!="probe_rejected"}', ''),
          }
        : undefined,
    );
    expect(res.code, res.out).not.toBe(0);
    expect(res.out).toMatch(/probed every 30 s/);
  });

  // ForkwatchTargetWithoutMetrics pages a blind process, never an idle one: each guard of its two blind clauses.
  const judgedNothingForAnHour =
    'min_over_time(forkwatch_instrumentation_info{sdk_class="none"}[1h]) == 1 and ' +
    'forkwatch_instrumentation_info{sdk_class="none"} offset 1h == 1';
  const blindGuardMutants: Record<string, { clause: string; failure: RegExp }> = {
    'paging as soon as nothing is judged': {
      clause: 'forkwatch_instrumentation_info{sdk_class="none"} == 1',
      failure: /idle/,
    },
    'without the hour-ago sample': {
      clause: 'min_over_time(forkwatch_instrumentation_info{sdk_class="none"}[1h]) == 1',
      failure: /nothing judged for the last hour/,
    },
    'without the whole hour': {
      clause: 'forkwatch_instrumentation_info{sdk_class="none"} offset 1h == 1',
      failure: /never judged nothing for a whole hour/,
    },
  };
  test.concurrent.each(eachOrder(Object.keys(blindGuardMutants).map(m => [m] as const)))(
    'ForkwatchTargetWithoutMetrics %s fails its unit tests, %s',
    async (mutant, order) => {
      const { clause, failure } = blindGuardMutants[mutant]!;
      const res = await runMutated(testFilesFor('ForkwatchTargetWithoutMetrics'), order, r => {
        if (r.alert !== 'ForkwatchTargetWithoutMetrics') return undefined;
        expect(r.expr).toContain(judgedNothingForAnHour);
        return { expr: r.expr.replace(judgedNothingForAnHour, clause) };
      });
      expect(res.code, res.out).not.toBe(0);
      expect(res.out).toMatch(failure);
    },
  );

  test.concurrent.each(EVAL_ORDER_NAMES)(
    'ForkwatchTargetWithoutMetrics ignoring MCP traffic no patched transport judges fails its unit tests, %s',
    async order => {
      const unjudged =
        /\s*or on \([^)]*\)\s*group by \([^)]*\) \(forkwatch_instrumentation_info\{sdk_class="unjudged"\} == 1\)/;
      const res = await runMutated(testFilesFor('ForkwatchTargetWithoutMetrics'), order, r => {
        if (r.alert !== 'ForkwatchTargetWithoutMetrics') return undefined;
        expect(r.expr).toMatch(unjudged);
        return { expr: r.expr.replace(unjudged, '') };
      });
      expect(res.code, res.out).not.toBe(0);
      expect(res.out).toMatch(/answers MCP that forkwatch cannot judge/);
    },
  );

  test.concurrent.each(EVAL_ORDER_NAMES)(
    'ForkwatchClientResultsLost counting re-issued breaks as lost results fails its unit tests, %s',
    async order => {
      const res = await runMutated(testFilesFor('ForkwatchClientResultsLost'), order, r =>
        r.alert === 'ForkwatchClientResultsLost'
          ? { expr: r.expr.replace('{outcome="not_reissued"}', '{outcome=~"not_reissued|reissued"}') }
          : undefined,
      );
      expect(res.code, res.out).not.toBe(0);
      expect(res.out).toMatch(/re-issued open a ticket and never page/);
    },
  );

  test.concurrent.each(EVAL_ORDER_NAMES)(
    "ForkwatchClientResultsLost counting the app's cancels as lost results fails its unit tests, %s",
    async order => {
      const res = await runMutated(testFilesFor('ForkwatchClientResultsLost'), order, r =>
        r.alert === 'ForkwatchClientResultsLost'
          ? {
              expr: r.expr.replace(
                'increase(forkwatch_client_reissues_total{outcome="not_reissued"}[15m])',
                '(increase(forkwatch_client_reissues_total{outcome="not_reissued"}[15m]) + ignoring(outcome) ' +
                  'increase(forkwatch_client_exchanges_total{outcome="cancelled"}[15m]))',
              ),
            }
          : undefined,
      );
      expect(res.code, res.out).not.toBe(0);
      expect(res.out).toMatch(/healthy client and server traffic/);
    },
  );

  test.concurrent.each(EVAL_ORDER_NAMES)(
    'ForkwatchServerDeliveryBudgetBurn counting abandoned events as loss fails its unit tests, %s',
    async order => {
      const res = await runMutated(
        testFilesFor('ForkwatchServerDeliveryBudgetBurn'),
        order,
        () => undefined,
        rules =>
          rules.replaceAll(
            'reason=~"stream_moved|no_listener|dropped"',
            'reason=~"stream_moved|no_listener|dropped|abandoned"',
          ),
      );
      expect(res.code, res.out).not.toBe(0);
      expect(res.out).toMatch(/crash-only/);
    },
  );
});
