/**
 * PLACEHOLDER until the fork lab lands: the lead owns this file and replaces it. `forkwatch lab` loads it lazily
 * and calls `runLabCli`.
 */
export async function runLabCli(_argv: string[]): Promise<number> {
  process.stderr.write('fork lab not built yet\n');
  return 2;
}
