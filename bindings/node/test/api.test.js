// api.test.js - the promise API against a real redis-server: acquire,
// release, extend, fence, the error classes, waits that leave the event
// loop ticking, AbortSignal cancellation with nothing held, the
// watchdog's loss reaching JavaScript, using(), and the other kinds
// (waits.test.js: 1,000 waits at once).
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { startServer, sleep, resp } = require('./helpers');
const tslock = require('..');
const { Client, TslockError, LockBusyError, LockLostError, LockCanceledError } = tslock;

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

test('acquire, fence, extend, release', async () => {
  const lock = await client.acquire('api:a', { ttl: 2000, fencing: true });
  assert.strictEqual(lock.held, true);
  assert.strictEqual(lock.scheme, 'token');
  assert.ok(lock.fence >= 1);
  assert.strictEqual(await r.call('GET', 'api:a'), lock.value);
  await lock.extend(10000);
  assert.ok((await r.call('PTTL', 'api:a')) > 5000);
  await lock.release();
  assert.strictEqual(lock.held, false);
  assert.strictEqual(await r.call('GET', 'api:a'), null);
  const again = await client.acquire('api:a', { fencing: true });
  assert.ok(again.fence > lock.fence, 'the fence grows with every hold');
  await again.release();
});

test('busy and lost are TslockError subclasses with the library code', async () => {
  const lock = await client.acquire('api:b', { ttl: 5000 });
  const busy = await client.acquire('api:b').catch((e) => e);
  assert.ok(busy instanceof LockBusyError);
  assert.ok(busy instanceof TslockError);
  assert.strictEqual(busy.errname, 'TSLOCK_EBUSY');
  assert.strictEqual(busy.code, tslock.errors ? undefined : busy.code);
  assert.strictEqual(busy.code, -1);
  await r.call('SET', 'api:b', 'someone-else');
  const lost = await lock.release().catch((e) => e);
  assert.ok(lost instanceof LockLostError, String(lost));
  assert.strictEqual(lost.errname, 'TSLOCK_ELOST');
  assert.strictEqual(lock.held, false);
  assert.strictEqual(await r.call('GET', 'api:b'), 'someone-else', 'never deletes another owner');
  await r.call('DEL', 'api:b');
});

test('bad URLs and options are TslockInvalidError', async () => {
  assert.throws(() => Client.fromUrl('http://x'), (e) => e.errname === 'TSLOCK_EINVAL');
  await assert.rejects(client.acquire('api:c', { scheme: 'nope' }), tslock.TslockInvalidError);
  await assert.rejects(client.acquire('api:c', { ttl: -5 }), tslock.TslockInvalidError);
  await assert.rejects(client.acquire('api:c', { dialect: '{nope}' }), (e) => e.errname === 'TSLOCK_EINVAL');
});

test('a wait runs off the event loop, which keeps ticking', async () => {
  const holder = await client.acquire('api:d', { ttl: 5000 });
  let ticks = 0;
  const t = setInterval(() => ticks++, 10);
  const started = Date.now();
  const waited = await client.acquire('api:d', { wait: 400 }).catch((e) => e);
  clearInterval(t);
  assert.ok(waited instanceof LockBusyError);
  assert.ok(Date.now() - started >= 350);
  assert.ok(ticks >= 20, `the loop ticked ${ticks} times in 400 ms`);
  await holder.release();
});

test('AbortSignal ends a wait at once with nothing held', async () => {
  const holder = await client.acquire('api:e', { ttl: 5000 });
  const ac = new AbortController();
  const waiting = client.acquire('api:e', { wait: Infinity, signal: ac.signal });
  await sleep(150);
  const t0 = Date.now();
  ac.abort(new Error('stop'));
  const e = await waiting.catch((x) => x);
  assert.ok(e instanceof LockCanceledError, String(e));
  assert.strictEqual(e.errname, 'TSLOCK_ECANCELED');
  assert.ok(Date.now() - t0 < 150, `ended ${Date.now() - t0} ms after abort`);
  await holder.release();
  assert.strictEqual(await r.call('EXISTS', 'api:e'), 0, 'the canceled waiter holds nothing');
  // An abort in the same tick as the call, before the lock object exists.
  const h2 = await client.acquire('api:e', { ttl: 5000 });
  const ac2 = new AbortController();
  const p = client.acquire('api:e', { wait: Infinity, signal: ac2.signal });
  ac2.abort();
  await assert.rejects(p, LockCanceledError);
  await assert.rejects(client.acquire('api:e', { signal: ac2.signal }), LockCanceledError);
  await h2.release();
  assert.strictEqual(await r.call('EXISTS', 'api:e'), 0);
});

test('the watchdog renews, and its loss reaches JavaScript', async () => {
  const lock = await client.acquire('api:f', { ttl: 600 });
  let lost = null;
  await lock.watch({ interval: 100, onLost: (e) => (lost = e) });
  await sleep(900);
  assert.strictEqual(lost, null);
  assert.strictEqual(await r.call('GET', 'api:f'), lock.value, 'renewed past its ttl');
  await lock.extend(600); // pauses the watchdog around the call
  await sleep(800);
  assert.strictEqual(await r.call('GET', 'api:f'), lock.value, 'still renewed after extend()');
  await r.call('SET', 'api:f', 'thief');
  for (let i = 0; i < 50 && !lost; i++) await sleep(20);
  assert.ok(lost instanceof LockLostError, String(lost));
  assert.strictEqual(lock.held, false);
  await assert.rejects(lock.release(), TslockError);
  await r.call('DEL', 'api:f');
});

test('using() renews while the routine runs and aborts its signal on loss', async () => {
  const v = await client.using('api:g', { ttl: 400 }, async (signal) => {
    await sleep(700);
    assert.strictEqual(signal.aborted, false);
    return 42;
  });
  assert.strictEqual(v, 42);
  assert.strictEqual(await r.call('EXISTS', 'api:g'), 0, 'released after the routine');
  const e = await client
    .using('api:g', { ttl: 600, renew: 100 }, async (signal) => {
      await r.call('SET', 'api:g', 'thief');
      await new Promise((res) => signal.addEventListener('abort', res));
      assert.ok(signal.reason instanceof LockLostError);
    })
    .catch((x) => x);
  assert.ok(e instanceof LockLostError, String(e));
  await r.call('DEL', 'api:g');
});

test('semaphores, read-write locks and fair waits', async () => {
  const a = await client.acquire('api:sem', { permits: 2 });
  const b = await client.acquire('api:sem', { permits: 2 });
  await assert.rejects(client.acquire('api:sem', { permits: 2 }), LockBusyError);
  assert.strictEqual(await a.holders(), 2);
  await a.release();
  await b.release();
  const r1 = await client.acquire('api:rw', { rw: 'shared' });
  const r2 = await client.acquire('api:rw', { rw: 'shared' });
  await assert.rejects(client.acquire('api:rw', { rw: 'exclusive' }), LockBusyError);
  await r1.release();
  await r2.release();
  const w = await client.acquire('api:rw', { rw: 'exclusive' });
  await assert.rejects(client.acquire('api:rw', { rw: 'shared' }), LockBusyError);
  await w.release();
  const f1 = await client.acquire('api:fair', { fair: true, ttl: 5000 });
  const order = [];
  const w1 = client.acquire('api:fair', { fair: true, wait: 5000 }).then((l) => (order.push(1), l));
  await sleep(100);
  const w2 = client.acquire('api:fair', { fair: true, wait: 5000 }).then((l) => (order.push(2), l));
  await sleep(100);
  await f1.release();
  const l1 = await w1;
  await sleep(50);
  await l1.release();
  await (await w2).release();
  assert.deepStrictEqual(order, [1, 2]);
});

test('8 waiters on one client hand the lock round 400 times, one at a time', async () => {
  let inside = 0;
  let overlaps = 0;
  let rounds = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (rounds < 400) {
      const lock = await client.acquire('api:contend', { wait: Infinity, ttl: 5000 });
      if (++inside > 1) overlaps++;
      await sleep(0);
      inside--;
      rounds++;
      await lock.release();
    }
  }));
  assert.strictEqual(overlaps, 0);
  assert.strictEqual(await r.call('EXISTS', 'api:contend'), 0);
});
