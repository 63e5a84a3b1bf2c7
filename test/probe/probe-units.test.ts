/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The probe's pure parts: arguments, bogus cursors, verdicts, Prometheus text. */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  type EventIdCodec,
  csharpCodec,
  detectCodec,
  goSdkCodec,
  hexSequenceCodec,
  integerCodec,
  javaSdkCodec,
  kotlinCodec,
  mcpProxyCodec,
  prefixSequenceCodec,
  rmcpCodec,
  sdkCodec,
} from '../../src/core/codecs';
import { SHAPELESS_BOGUS_CURSOR, bogusCursor, isPlausibleNext } from '../../src/cli/probe/bogus-cursor';
import { repeatedCondition, replayCondition } from '../../src/cli/probe/conditions';
import type { ResumeAttempt } from '../../src/cli/probe/report';
import type { ResumeTarget } from '../../src/cli/probe/resume';
import { reproducibleMarkers } from '../../src/cli/probe/markers';
import type { SseFrame } from '../../src/cli/probe/sse-reader';
import { storedWhileAway } from '../../src/cli/probe/standalone-replay';
import { DEFAULTS, parseProbeArgs } from '../../src/cli/probe/options';
import { probeMetricNames, pushgatewayUrl, renderPrometheus, writePromFile } from '../../src/cli/probe/prometheus';
import {
  type CONDITIONS,
  type ConditionResult,
  EXIT_CODES,
  type ProbeReport,
  allConditions,
  decideVerdict,
  summarizeResumes,
  STANDALONE_CONDITIONS,
  allStandalone,
} from '../../src/cli/probe/report';
import { standaloneReport } from '../../src/cli/probe/standalone';

describe('parseProbeArgs', () => {
  const parse = (args: string[], env: NodeJS.ProcessEnv = {}) => {
    const parsed = parseProbeArgs(args, env);
    if (parsed.kind !== 'options') throw new Error(`expected options, got ${JSON.stringify(parsed)}`);
    return parsed.options;
  };

  test('defaults', () => {
    const o = parse(['http://127.0.0.1:1/mcp']);
    expect(o).toMatchObject({
      timeoutMs: DEFAULTS.timeoutMs,
      resumes: DEFAULTS.resumes,
      protocolVersion: '2025-11-25',
      json: false,
      headers: {},
    });
    expect(o.promFile).toBeUndefined();
  });

  test('headers, bearer token (flag over environment), URL credentials as Basic', () => {
    const o = parse(
      ['https://u%40x:p%3Aw@h.example/mcp?k=1', '-H', 'X-A: 1', '--header', 'x-b:two: parts', '--bearer', 'flag'],
      {
        FORKWATCH_PROBE_TOKEN: 'env',
      },
    );
    expect(o.headers).toEqual({ 'x-a': '1', 'x-b': 'two: parts', authorization: 'Bearer flag' });
    expect(parse(['http://h/'], { FORKWATCH_PROBE_TOKEN: 'env' }).headers.authorization).toBe('Bearer env');
    const basic = parse(['https://u%40x:p%3Aw@h.example/mcp']);
    expect(basic.headers.authorization).toBe(`Basic ${Buffer.from('u@x:p:w').toString('base64')}`);
    expect(basic.url.href).toBe('https://h.example/mcp');
  });

  test.each([
    [[], 'expected exactly one <url>'],
    [['ftp://h/'], 'not an http(s) URL'],
    [['http://h/', '--timeout', '0'], '--timeout'],
    [['http://h/', '--resumes', 'x'], '--resumes'],
    [['http://h/', '--protocol-version', '2026-07-28'], '--protocol-version'],
    [['http://h/', '-H', 'no colon'], 'bad header'],
    [['http://h/', '--nope'], 'nope'],
    // Malformed %-escapes in the user part were a URIError and a stack trace (issue 38).
    [['http://a%zz:b@127.0.0.1:1/mcp'], "bad %-escape in the URL's user or password"],
    [['http://a:b%@127.0.0.1:1/mcp'], "bad %-escape in the URL's user or password"],
    [['http://a%e9:b@127.0.0.1:1/mcp'], "bad %-escape in the URL's user or password"],
    [['http://h/', '-H', 'X-A: one\rtwo'], 'bad header value'],
    [['http://h/', '-H', 'X-A: \u0100'], 'bad header value'],
    [['http://h/', '--bearer', 'tok\nen'], 'bad bearer token'],
    [['http://h/', '--pushgateway', 'http://u:p@pg:9091/'], '--pushgateway: credentials'],
    [['http://h/', '--pushgateway', 'http://[::1'], 'not an http(s) URL'],
  ])('rejects %j', (args, message) => {
    const parsed = parseProbeArgs(args, {});
    expect(parsed.kind).toBe('error');
    expect(parsed.kind === 'error' && parsed.message).toContain(message);
  });
});

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const UUID_A = '3b241101-e2bb-4255-8caf-4136c566a962';
const EVERY_CODEC: EventIdCodec[] = [
  integerCodec,
  sdkCodec,
  mcpProxyCodec,
  hexSequenceCodec,
  goSdkCodec,
  rmcpCodec,
  csharpCodec,
  javaSdkCodec,
  kotlinCodec,
  prefixSequenceCodec,
];
/** One real-shaped cursor per format (sources in test/core/codecs.languages.test.ts). */
const BOGUS_SAMPLES: [string, string][] = [
  ['sdk', '_GET_stream_1796021149499_86k2o2n4'],
  ['hex-sequence', '_GET_stream:00000002'],
  ['go-sdk', '_4'],
  ['go-sdk', '_0'],
  ['go-sdk', 'JBSWY3DPEHPK3PXPJBSWY3DPEH_2'],
  ['rmcp', '3/7'],
  ['rmcp', '0/0'],
  ['integer', '5'],
  ['csharp', `${b64('q1zq3hTzQnqB5Kj3d1p2xg')}:${b64('__get__')}:9`],
  ['java-sdk', `${UUID_A}_b3f1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d`],
  ['kotlin', `_GET_stream::1765000000000_${UUID_A}`],
  ['kotlin', `${UUID_A}::1765000000000_${UUID_A}`],
  ['prefix-sequence', 'event-2'],
];

describe('bogusCursor', () => {
  test.each([
    ['sdk', 'b3f1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d_1796021149499_86k2o2n4'],
    ['mcp-proxy', 'b3f1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d_1796021149499_00a1_x9z'],
    ['hex-sequence', 'b3f1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d:00000001'],
    ['integer', '42'],
    ...BOGUS_SAMPLES,
  ])('keeps the %s format, never returns the real cursor, and is no plausible next id of it', (codec, real) => {
    const bogus = bogusCursor(real);
    expect(bogus).not.toBe(real);
    expect(detectCodec(bogus)?.name).toBe(codec);
    expect(detectCodec(real)?.name).toBe(codec);
    // By every codec's reading: another stream, or (no stream in the format) a position far ahead.
    for (const c of EVERY_CODEC) {
      const before = c.decode(real);
      const after = c.decode(bogus);
      if (before === undefined || after === undefined || before.stream !== after.stream) continue;
      expect(after.sequence, `${c.name} reads ${bogus} as a near next id of ${real}`).toBeDefined();
      expect(after.sequence! - before.sequence!).toBeGreaterThanOrEqual(1e9);
    }
  });

  test("Go's standalone `_4`: the bogus cursor is another stream, never `_5` (the next real id)", () => {
    const bogus = bogusCursor('_4');
    expect(bogus).not.toMatch(/^_\d+$/);
    expect(bogus).toMatch(/^[A-Z2-7]{26}_4$/);
    expect(isPlausibleNext('_4', '_5')).toBe(true);
    expect(isPlausibleNext('_4', bogus)).toBe(false);
  });

  test('rmcp `3/7`: a request that never existed at the same index, never `4/8`', () => {
    expect(bogusCursor('3/7')).toBe('3/1000000000007');
  });

  test("C#: the cursor's own session, a stream it never had", () => {
    const real = `${b64('q1zq3hTzQnqB5Kj3d1p2xg')}:${b64('__get__')}:9`;
    const [session, stream, sequence] = bogusCursor(real).split(':');
    expect(session).toBe(b64('q1zq3hTzQnqB5Kj3d1p2xg'));
    expect(Buffer.from(stream!, 'base64').toString()).toBe('forkwatch-probe-never-issued');
    expect(sequence).toBe('9');
  });

  test('avoids ids already seen, and has a fallback when there is nothing to imitate', () => {
    const real = 'abc:0001';
    const first = bogusCursor(real);
    expect(bogusCursor(real, new Set([first]))).not.toBe(first);
    expect(bogusCursor(undefined)).toBe(SHAPELESS_BOGUS_CURSOR);
  });
});

describe('verdict and exit codes', () => {
  const with_ = (overrides: Partial<Record<(typeof CONDITIONS)[number], ConditionResult['status']>>) => {
    const conditions = allConditions('pass', '');
    for (const [name, status] of Object.entries(overrides))
      conditions[name as keyof typeof conditions] = { status: status!, detail: '' };
    return conditions;
  };

  test('all pass → resumable (0); any fail → not resumable (1), even next to untested ones', () => {
    expect(decideVerdict(with_({}))).toBe('resumable');
    expect(decideVerdict(with_({ bogus_cursor_refused: 'fail', replay: 'not_tested' }))).toBe('not_resumable');
    expect(EXIT_CODES.resumable).toBe(0);
    expect(EXIT_CODES.not_resumable).toBe(1);
  });

  test('untested without a failure → could not test (2); all not applicable → not applicable (2)', () => {
    expect(decideVerdict(with_({ repeated_resumes: 'not_tested' }))).toBe('untestable');
    expect(decideVerdict(allConditions('not_applicable', ''))).toBe('not_applicable');
    expect(EXIT_CODES.untestable).toBe(2);
    expect(EXIT_CODES.not_applicable).toBe(2);
  });

  test('resume summary: outcomes, forked share, statuses and first ids', () => {
    const base = { conflictRetries: 0, ms: 1, detail: '' };
    const s = summarizeResumes([
      { ...base, attempt: 1, status: 200, outcome: 'resumed', firstEventId: 's:2' },
      { ...base, attempt: 2, status: 200, outcome: 'forked' },
      { ...base, attempt: 3, status: 200, outcome: 'forked', firstEventId: null },
      { ...base, attempt: 4, status: 404, outcome: 'rejected' },
    ]);
    expect(s.outcomes).toEqual({ unverified: 0, resumed: 1, forked: 2, rejected: 1, failed: 0, inconclusive: 0 });
    expect(s.forkedRatio).toBe(0.5);
    expect(s.statusCodes).toEqual({ '200': 3, '404': 1 });
    expect(s.firstEventIds).toEqual({ 's:2': 1, '(no frame)': 1, '(no id)': 1 });
    expect(summarizeResumes([]).forkedRatio).toBeNull();
  });
});

describe('Prometheus text', () => {
  const report = {
    target: 'http://h/"mcp"\\x',
    verdict: 'not_resumable',
    durationMs: 1500,
    conditions: {
      ...allConditions('pass', ''),
      repeated_resumes: { status: 'fail', detail: '' },
      replay: { status: 'not_tested', detail: '' },
    },
    resumes: summarizeResumes([]),
    streams: {
      request: { verdict: 'not_resumable' },
      standalone: standaloneReport(allStandalone('not_tested', 'nothing sent on it')),
    },
    steps: [
      { step: 'initialize', method: 'POST', status: 200, ms: 1 },
      { step: 'bogus_cursor', method: 'GET', status: 400, ms: 1 },
      { step: 'resume', method: 'GET', status: 200, ms: 1 },
      { step: 'resume_repeat_1', method: 'GET', status: null, ms: 1 },
    ],
  } as unknown as ProbeReport;

  test('every metric family once, all prefixed forkwatch_probe_, target label escaped, NaN without attempts', () => {
    const text = renderPrometheus(report, 1_700_000_000_000);
    const names = probeMetricNames();
    expect(names.length).toBeGreaterThan(5);
    for (const name of names) {
      expect(name.startsWith('forkwatch_probe_')).toBe(true);
      expect(text.split('\n').filter(l => l.startsWith(`# TYPE ${name} `))).toHaveLength(1);
    }
    const t = 'target="http://h/\\"mcp\\"\\\\x"';
    expect(text).toContain(`forkwatch_probe_resumable{${t}} 0\n`);
    expect(text).toContain(`forkwatch_probe_success{${t}} 0\n`);
    expect(text).toContain(`forkwatch_probe_verdict{${t},verdict="not_resumable"} 1\n`);
    const r = `${t},stream="request"`;
    const sa = `${t},stream="standalone"`;
    expect(text).toContain(`forkwatch_probe_stream_verdict{${r},verdict="not_resumable"} 1\n`);
    expect(text).toContain(`forkwatch_probe_stream_verdict{${sa},verdict="untestable"} 1\n`);
    expect(text).toContain(`forkwatch_probe_condition_ok{${r},condition="repeated_resumes"} 0\n`);
    expect(text).toContain(`forkwatch_probe_condition_tested{${r},condition="replay"} 0\n`);
    expect(text).toContain(`forkwatch_probe_condition_tested{${r},condition="repeated_resumes"} 1\n`);
    // Every standalone condition is there, untested: never a pass.
    for (const c of STANDALONE_CONDITIONS) {
      expect(text).toContain(`forkwatch_probe_condition_ok{${sa},condition="${c}"} 0\n`);
      expect(text).toContain(`forkwatch_probe_condition_tested{${sa},condition="${c}"} 0\n`);
    }
    expect(text).toContain(`forkwatch_probe_resume_forked_ratio{${r}} NaN\n`);
    expect(text).toContain(`forkwatch_probe_http_responses{${t},status="200"} 2\n`);
    expect(text).toContain(`forkwatch_probe_http_responses{${t},status="400"} 1\n`);
    expect(text).toContain(`forkwatch_probe_http_responses{${t},status="none"} 1\n`);
    expect(text).toContain(`forkwatch_probe_last_run_timestamp_seconds{${t}} 1700000000\n`);
    // The exporter's flavour: no target label (Prometheus relabels the target into instance).
    const bare = renderPrometheus(report, { finishedAt: 1_700_000_000_000, targetLabel: false });
    expect(bare).toContain('forkwatch_probe_resumable 0\n');
    expect(bare).not.toContain('target=');
  });

  test('writePromFile replaces the file atomically and leaves no temporary file, also when it fails', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forkwatch-prom-'));
    try {
      const path = join(dir, 'probe.prom');
      await writePromFile(path, 'a 1\n');
      await writePromFile(path, 'a 2\n');
      expect(readFileSync(path, 'utf8')).toBe('a 2\n');
      expect(readdirSync(dir)).toEqual(['probe.prom']);
      // The rename fails (a directory is in the way): the temporary file must go too.
      mkdirSync(join(dir, 'taken.prom'));
      await expect(writePromFile(join(dir, 'taken.prom'), 'a 1\n')).rejects.toThrow();
      expect(readdirSync(dir).sort()).toEqual(['probe.prom', 'taken.prom']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('Pushgateway grouping key: job plus base64url target', () => {
    const url = pushgatewayUrl(new URL('http://pg:9091/'), 'forkwatch probe', 'https://h/mcp');
    expect(url.href).toBe(
      `http://pg:9091/metrics/job/forkwatch%20probe/target@base64/${Buffer.from('https://h/mcp').toString('base64url')}`,
    );
  });
});

describe('replay proof by time-stamped ids (storedWhileAway)', () => {
  const at = (ms: number) => `_GET_stream_${ms}_abcd1234`;
  // The server's clock runs an hour ahead of the probe's: only the server's own cursor is compared with its stamps.
  const SKEW = 3_600_000;
  const cursorMs = 1_796_000_000_000;
  const proof = { cursor: at(cursorMs), consumed: new Set([at(cursorMs)]), cursorReadAt: cursorMs - SKEW + 5 };
  const resumeSentAt = proof.cursorReadAt + 2000;

  test('stamped after the cursor and before the resume was sent (by the server clock): stored while away', () => {
    expect(storedWhileAway(at(cursorMs + 600), { ...proof, resumeSentAt })).toEqual({
      afterCursorMs: 600,
      beforeResumeMs: 1400,
    });
  });

  test('stamped after the resume, before the cursor, on another stream, consumed, or without a time: no proof', () => {
    for (const id of [
      at(cursorMs + 2000), // a fresh log's live event, made after the resume arrived
      at(cursorMs - 1),
      `b3f1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d_${cursorMs + 600}_abcd1234`,
      at(cursorMs),
      '3b241101-e2bb-4255-8caf-4136c566a962',
      undefined,
    ])
      expect(storedWhileAway(id, { ...proof, resumeSentAt })).toBeUndefined();
    expect(storedWhileAway(at(cursorMs + 600), { ...proof, cursorReadAt: undefined, resumeSentAt })).toBeUndefined();
  });
});

describe('markers that come again (reproducibleMarkers)', () => {
  const log = (data: string): SseFrame => ({
    id: undefined,
    data: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { data } }),
  });

  test("a tool's fixed notifications are markers; a live tick or a counter that differs per call is not", () => {
    const markers = reproducibleMarkers(
      [
        [log('notify 1'), log('notify 2'), log('live 7')],
        [log('notify 1'), log('notify 2'), log('live 8')],
      ],
      [],
    );
    expect([...markers].map(m => JSON.parse(m)[1].data)).toEqual(['notify 1', 'notify 2']);
    expect(
      reproducibleMarkers(
        [
          [log('notify 1'), log('notify 2')],
          [log('notify 3'), log('notify 4')],
        ],
        [],
      ).size,
    ).toBe(0);
    // Nothing came after the second call: the first call's events may have been live ones.
    expect(reproducibleMarkers([[log('live 1')], []], []).size).toBe(0);
    // What arrived before the probe made the server send anything is live.
    expect(reproducibleMarkers([[log('hb')], [log('hb')]], [log('hb')]).size).toBe(0);
  });
});

describe('the cause of forks behind a round-robin balancer (repeatedCondition, replayCondition)', () => {
  const stream = '7f1c2b3a-0000-4000-8000-000000000001';
  // SDK-shaped ids in one millisecond: the random suffix decides their order, as on a fast local server.
  const id = (rand: string) => `${stream}_1765000000000_${rand}`;
  const attempt = (k: number, outcome: 'resumed' | 'forked'): ResumeAttempt => ({
    attempt: k + 1,
    status: 200,
    outcome,
    conflictRetries: 0,
    ms: 5,
    detail: outcome,
  });
  // Every fork's response sorts before its cursor (the example store would have lost it), and so does one response
  // that was replayed all the same: the store replays in another order, so the forks are another replica's log.
  const outcomes = ['resumed', 'forked', 'resumed', 'forked', 'resumed', 'resumed'] as const;
  const attempts = outcomes.map((o, k) => attempt(k, o));
  const targets: ResumeTarget[] = outcomes.map((o, k) => ({
    consumedUpToCursor: new Set<string>(),
    cursor: id(`m000000${k}`),
    responseId: o === 'forked' || k === 0 ? id(`a000000${k}`) : id(`z000000${k}`),
  }));

  test('a resume that got a response sorting before its cursor refutes the example store: other_replica', () => {
    expect(repeatedCondition(attempts, targets).cause).toBe('other_replica');
    expect(replayCondition(attempts[1]!, targets[1]!, { attempts, targets }).cause).toBe('other_replica');
  });

  test('every fork sorting before its cursor and every resume after it: the example store, as before', () => {
    const consistent = targets.map((t, k) => (k === 0 ? { ...t, responseId: id('z0000000') } : t));
    expect(repeatedCondition(attempts, consistent).cause).toBe('example_store_id_order');
  });
});
