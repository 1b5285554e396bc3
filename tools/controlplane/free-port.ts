import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

// Ports for the processes tests and the bench start. A port from listen(0)
// comes from the kernel's ephemeral range, which the kernel also hands to
// every outgoing connection and every other listen(0): between our probe
// closing it and the child binding it, someone else may take it. So ports are
// taken from below the ephemeral range instead, where the kernel never
// allocates on its own, walking a sequence from a random start that never
// hands out the same port twice (per module instance: jest loads this module
// once per test file). Each candidate is still checked by binding it, in case
// another program uses it.

const FALLBACK_EPHEMERAL_START = 32768;
const LOWEST = 10000;

function ephemeralStart(): number {
  try {
    const [start] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    return start !== undefined && Number.isInteger(start) && start > LOWEST + 1000 ? start : FALLBACK_EPHEMERAL_START;
  } catch {
    return FALLBACK_EPHEMERAL_START;
  }
}

const span = ephemeralStart() - LOWEST;
let next = randomInt(span);
let handedOut = 0;

/** Whether a listener can be opened on the port now (nobody else listens on it). */
export function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A loopback port nobody is listening on, and that this process has not handed out before. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 1000; tries++) {
    if (handedOut >= span) break;
    const port = LOWEST + next;
    next = (next + 1) % span;
    handedOut++;
    if (await bindable(port)) return port;
  }
  throw new Error('no free loopback port below the ephemeral range');
}
