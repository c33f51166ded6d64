// waits.test.js - 1,000 concurrent waits from one process: every one is
// pending at once while the event loop keeps turning (its delay is
// printed), then each takes the lock in turn, alone, and an aborted
// half ends at once with nothing held.  The libuv pool keeps its 4
// threads: a waiting acquire() runs on a thread of its own (doc/node.md),
// so the release they wait for never queues behind them.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { monitorEventLoopDelay } = require('perf_hooks');
const { startServer, sleep, resp } = require('./helpers');
const { Client, LockCanceledError } = require('..');

const N = 1000;
let server, client, r;
test.before(async () => {
  server = await startServer();
  client = Client.fromUrl(server.url);
  r = await resp(server.sock);
});
test.after(() => {
  r.close();
  client.close();
  server.stop();
});

test(`${N} concurrent waits from one process`, async () => {
  const key = 'waits:k';
  const holder = await client.acquire(key, { ttl: 30000 });
  let inside = 0;
  let overlaps = 0;
  let taken = 0;
  const acs = [];
  const waits = [];
  for (let i = 0; i < N; i++) {
    const ac = new AbortController();
    acs.push(ac);
    waits.push(client.acquire(key, { wait: Infinity, signal: ac.signal, ttl: 10000 }).then(async (lock) => {
      if (++inside > 1) overlaps++;
      await sleep(0);
      inside--;
      taken++;
      await lock.release();
      return 'taken';
    }, (e) => e));
  }
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  await sleep(500);
  h.disable();
  console.log(`event loop delay with ${N} waits pending: p50 ${(h.percentile(50) / 1e6).toFixed(1)} ms, ` +
    `p99 ${(h.percentile(99) / 1e6).toFixed(1)} ms, max ${(h.max / 1e6).toFixed(1)} ms`);
  assert.strictEqual(taken, 0, 'none took a held lock');
  assert.ok(h.count >= 10, `the loop turned while they waited (${h.count} samples)`);
  // Half give up; the other half take the lock one after another.
  for (let i = 0; i < N; i += 2) acs[i].abort();
  const t0 = Date.now();
  await holder.release();
  const out = await Promise.all(waits);
  const canceled = out.filter((e) => e instanceof LockCanceledError).length;
  console.log(`${taken} waits took the lock in turn after the release (${Date.now() - t0} ms), ${canceled} were aborted`);
  assert.strictEqual(overlaps, 0);
  assert.strictEqual(taken + canceled, N, String(out.find((e) => e !== 'taken' && !(e instanceof LockCanceledError))));
  assert.strictEqual(canceled, N / 2, 'every aborted wait ended canceled');
  assert.strictEqual(taken, N / 2, 'every other wait took the lock');
  assert.strictEqual(await r.call('EXISTS', key), 0, 'nothing left held');
});
