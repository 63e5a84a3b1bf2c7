/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The probe's progress line on stderr: on a terminal, one line rewritten in place as the probe moves on, with the
 * elapsed time, and erased before the report is printed; when stderr is a file or a pipe, nothing (logs stay clean).
 */
/** Where the probe says what it is doing (one short phrase at a time): run-probe.ts and standalone.ts speak to it. */
export type ProgressSink = (phrase: string) => void;

export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

export interface ProgressLine {
  sink: ProgressSink;
  /** Erases the line, if one was drawn. */
  clear(): void;
}

const QUIET: ProgressLine = { sink: () => undefined, clear: () => undefined };

export function progressLine(stream: ProgressStream, startedAt = Date.now()): ProgressLine {
  if (!stream.isTTY) return QUIET;
  let drawn = false;
  return {
    sink: phrase => {
      const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
      const text = `forkwatch probe: ${phrase} (${seconds} s)`.slice(0, lineWidth(stream.columns));
      stream.write(`\r\x1b[2K${text}`);
      drawn = true;
    },
    clear: () => {
      if (drawn) stream.write('\r\x1b[2K');
      drawn = false;
    },
  };
}

/** Terminals (and emulators in CI) may report 0 columns or none: then a sane 80, never a 20-character stub. */
export function lineWidth(columns: number | undefined): number {
  if (columns === undefined || !Number.isFinite(columns) || columns <= 0) return 79;
  return Math.max(20, columns - 1);
}
