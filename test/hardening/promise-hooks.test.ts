/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * forkwatch never turns on Node 20's promise hooks. The first `AsyncLocalStorage.run` of a process (the
 * OpenTelemetry context manager's included) turns on an async hook for good, and with it a hook on every promise:
 * about a tenth more CPU per notification for an SDK server (bench/outside-in.mjs). A resume on both sides, in a
 * separate process with the real SDKs and the real OpenTelemetry SDK, must leave it off; inside a context the host
 * entered, the host's code still runs in the resume's.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT_CONTEXT, context, createContextKey } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { withEnteredContext } from '../../src/shared/entered-context';

test('a resume on the client and the server of one process turns no promise hook on', () => {
  // --expose-internals: the fixture reads Node's hook count through internalBinding where process.binding is gone.
  const fixture = join(__dirname, 'fixtures/promise-hooks-app.cjs');
  const out = execFileSync(process.execPath, ['--expose-internals', fixture], {
    cwd: join(__dirname, '../..'),
    encoding: 'utf8',
    timeout: 60_000,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const report = JSON.parse(out.trim().split('\n').pop()!);
  expect(report).toMatchObject({ client: 'resumed', server: 'replayed', received: [1, 2] });
  expect(report.before).toBe(false);
  expect(report.after).toBe(false);
});

const KEY = createContextKey('test.key');
let manager: AsyncLocalStorageContextManager;
beforeAll(() => {
  manager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(manager);
});
afterAll(() => {
  context.disable();
});

test('outside every context the host code runs as it is; inside one, in the resume context', () => {
  const resumeContext = ROOT_CONTEXT.setValue(KEY, 'resume');
  expect(withEnteredContext(resumeContext, () => context.active())).toBe(ROOT_CONTEXT);
  const hostContext = ROOT_CONTEXT.setValue(KEY, 'host');
  const inside = context.with(hostContext, () => withEnteredContext(resumeContext, () => context.active()));
  expect(inside.getValue(KEY)).toBe('resume');
});
