/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** `forkwatch exporter --config <file> [--listen host:port]`: runs until SIGTERM or SIGINT. */
import type { Server } from 'node:http';
import { parseArgs } from 'node:util';
import { USAGE_ERROR } from '../probe/report';
import { ConfigError, loadConfig } from './config';
import { createExporter, listen } from './server';

export const DEFAULT_LISTEN = '127.0.0.1:9465';

/** The address cannot be listened on (in use, not this host's, no permission): sysexits' EX_UNAVAILABLE. */
export const CANNOT_LISTEN = 69;

export const EXPORTER_USAGE = `Usage: forkwatch exporter --config <file> [--listen host:port]

Serves the probe in the blackbox_exporter pattern: Prometheus scrapes
  /probe?target=<MCP endpoint URL>&module=<module name>
and gets forkwatch_probe_* metrics for that target; /metrics has the exporter's own.

Options:
  --config <file>      modules (JSON; see docs/probe.md, "The exporter")
  --listen host:port   where to listen (default ${DEFAULT_LISTEN})
  -h, --help           show this help

Exit codes: 0 stopped by SIGTERM or SIGINT, 64 usage or config error, ${CANNOT_LISTEN} cannot listen on the address.
`;

export async function runExporterCli(argv: readonly string[]): Promise<number> {
  let values: { config?: string; listen?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: { config: { type: 'string' }, listen: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    }));
  } catch (error) {
    process.stderr.write(`forkwatch exporter: ${(error as Error).message}\n\n${EXPORTER_USAGE}`);
    return USAGE_ERROR;
  }
  if (values.help) {
    process.stdout.write(EXPORTER_USAGE);
    return 0;
  }
  if (values.config === undefined) {
    process.stderr.write(`forkwatch exporter: --config is required\n\n${EXPORTER_USAGE}`);
    return USAGE_ERROR;
  }
  const address = parseListen(values.listen ?? DEFAULT_LISTEN);
  if (address === undefined) {
    process.stderr.write(`forkwatch exporter: --listen wants host:port, got ${values.listen}\n`);
    return USAGE_ERROR;
  }
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(values.config);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`forkwatch exporter: ${error.message}\n`);
    return USAGE_ERROR;
  }
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const exporter = createExporter({ config, log });
  let server: Server;
  try {
    server = await listen(exporter, address.host, address.port, log);
  } catch (error) {
    process.stderr.write(
      `forkwatch exporter: cannot listen on ${values.listen ?? DEFAULT_LISTEN}: ${listenError(error)}\n`,
    );
    return CANNOT_LISTEN;
  }
  const bound = server.address() as { port: number };
  process.stderr.write(`forkwatch exporter: listening on http://${address.host}:${bound.port}\n`);
  await new Promise<void>(resolve => {
    const stop = () => {
      server.closeAllConnections();
      server.close(() => resolve());
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  return 0;
}

/** One line: what went wrong, in words, with the system's code. */
function listenError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const words: Record<string, string> = {
    EADDRINUSE: 'the address is already in use',
    EACCES: 'permission denied',
    EADDRNOTAVAIL: 'the address is not available on this host',
    ENOTFOUND: 'unknown host',
  };
  if (code !== undefined && words[code] !== undefined) return `${words[code]} (${code})`;
  return error instanceof Error ? error.message.split('\n')[0]! : String(error);
}

function parseListen(text: string): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(text);
  if (!match) return undefined;
  const port = Number(match[2]);
  if (port > 65535) return undefined;
  return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
}
