/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** `forkwatch probe`: parse the arguments, run the probe, print the report, write the metrics, pick the exit code. */
import { PROBE_USAGE, parseProbeArgs } from './options';
import { pushToGateway, pushgatewayUrl, renderPrometheus, writePromFile } from './prometheus';
import { progressLine, type ProgressLine } from './progress';
import { renderText } from './render-text';
import { EXIT_CODES, type ProbeReport, USAGE_ERROR } from './report';
import { runProbe } from './run-probe';

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
  /** The progress line (progress.ts); absent: none. */
  progress?: ProgressLine;
}

export const processIo: CliIo = {
  stdout: text => process.stdout.write(text),
  stderr: text => process.stderr.write(text),
  env: process.env,
  get progress() {
    return progressLine(process.stderr);
  },
};

/** Exit code for an output that could not be written: the probe could not deliver its answer. */
const CANNOT_TEST = EXIT_CODES.untestable;

export async function runProbeCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  const parsed = parseProbeArgs(argv, io.env);
  if (parsed.kind === 'help') {
    io.stdout(PROBE_USAGE);
    return 0;
  }
  if (parsed.kind === 'error') {
    io.stderr(`forkwatch probe: ${parsed.message}\n\n${PROBE_USAGE}`);
    return USAGE_ERROR;
  }
  const options = parsed.options;
  const progress = io.progress;
  let report: ProbeReport;
  try {
    report = await runProbe(options, progress?.sink);
  } finally {
    progress?.clear();
  }
  io.stdout(options.json ? `${JSON.stringify(report, null, 2)}\n` : renderText(report));

  // The verdict decides the exit code; a requested output that failed only turns a pass into "could not test".
  let exitCode: number = report.exitCode;
  const prom = options.promFile !== undefined || options.pushgateway !== undefined ? renderPrometheus(report) : '';
  if (options.promFile !== undefined) {
    try {
      await writePromFile(options.promFile, prom);
    } catch (error) {
      io.stderr(`forkwatch probe: cannot write ${options.promFile}: ${(error as Error).message}\n`);
      if (exitCode === 0) exitCode = CANNOT_TEST;
    }
  }
  if (options.pushgateway !== undefined) {
    try {
      await pushToGateway(pushgatewayUrl(options.pushgateway, options.pushJob, report.target), prom, options.timeoutMs);
    } catch (error) {
      io.stderr(`forkwatch probe: cannot push to ${options.pushgateway.origin}: ${(error as Error).message}\n`);
      if (exitCode === 0) exitCode = CANNOT_TEST;
    }
  }
  return exitCode;
}
