#!/usr/bin/env node
/** The `forkwatch` command: `forkwatch probe <url>` and `forkwatch lab`. */
import { runProbeCli } from './probe/cli';

const USAGE = `Usage: forkwatch <command> [options]

Commands:
  probe <url>   test a live MCP endpoint for session resumability (forkwatch probe --help)
  lab           run the fork lab
`;

export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'probe':
      return runProbeCli(rest);
    case 'lab': {
      // Loaded only when asked for: the lab pulls in far more than the probe needs.
      const lab = require('../lab/cli') as typeof import('../lab/cli');
      return lab.runLabCli([...rest]);
    }
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`forkwatch: unknown command '${command}'\n\n${USAGE}`);
      return 2;
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    code => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`forkwatch: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 2;
    },
  );
}
