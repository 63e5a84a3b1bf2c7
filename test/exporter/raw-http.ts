/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** One HTTP exchange over a raw socket: the bytes go out as written (fetch would normalise the path first). */
import { connect } from 'node:net';

/** The status code of the answer (0: the connection closed without a status line). */
export function rawStatus(port: number, request: string | Buffer, timeoutMs = 10_000): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let head = '';
    socket.setTimeout(timeoutMs, () => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms to ${JSON.stringify(String(request).slice(0, 120))}`));
    });
    socket.on('data', chunk => (head += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)));
    socket.end(typeof request === 'string' ? Buffer.from(request, 'latin1') : request);
  });
}
