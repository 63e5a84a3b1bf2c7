/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * forkwatch's own diagnostics while forkwatch/register has not yet decided how to report. With synchronous loader
 * hooks (module.registerHooks) an ESM app's imports load, and are patched, before that decision, when no diag
 * logger is in place yet: what forkwatch says then (which class it patched, which version it left alone) would be
 * lost. They are held, at most MAX_HELD of them, and handed on when register has set up the logger (its own on
 * stderr, or the app's). forkwatch never registers a global diag logger early for this: an app that sets its own
 * would be told that it overwrote one.
 */
import type { DiagLogger } from '@opentelemetry/api';

const MAX_HELD = 200;
type Level = 'error' | 'warn' | 'info' | 'debug' | 'verbose';

let holding = false;
const loggers = new Set<HeldDiagLogger>();

/** forkwatch/register, before it creates the instrumentation: hold what it says from now on. */
export function holdDiagnostics(): void {
  holding = true;
}

/** forkwatch/register, once its logger (or the app's) is in place: hand on what was held, and stop holding. */
export function releaseDiagnostics(): void {
  holding = false;
  for (const logger of loggers) logger.release();
  loggers.clear();
}

/** A DiagLogger that forwards to the logger `target()` gives at the time, or holds while register is undecided. */
export class HeldDiagLogger implements DiagLogger {
  private held: { level: Level; message: string; args: unknown[] }[] | undefined;
  private dropped = 0;

  constructor(private readonly target: () => DiagLogger) {
    if (holding) {
      this.held = [];
      loggers.add(this);
    }
  }

  error = (message: string, ...args: unknown[]) => this.log('error', message, args);
  warn = (message: string, ...args: unknown[]) => this.log('warn', message, args);
  info = (message: string, ...args: unknown[]) => this.log('info', message, args);
  debug = (message: string, ...args: unknown[]) => this.log('debug', message, args);
  verbose = (message: string, ...args: unknown[]) => this.log('verbose', message, args);

  release(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const { level, message, args } of held) this.target()[level](message, ...args);
    if (this.dropped > 0) this.target().warn(`${this.dropped} more diagnostics from start-up were dropped`);
    this.dropped = 0;
  }

  private log(level: Level, message: string, args: unknown[]): void {
    if (!this.held) return void this.target()[level](message, ...args);
    if (this.held.length < MAX_HELD) this.held.push({ level, message, args });
    else this.dropped++;
  }
}
