// bridge.test.js - tslock's bridge scheme in npm redis-lock 0.0.x's
// dialect on the same key as a legacy peer (helpers.LegacyRedisLock,
// written from redis-lock 0.0.8's documented behaviour): no overlap
// while both keep their leases, and a legacy GETSET takeover of an
// expired tslock hold is reported to tslock as loss.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { startServer, startOldRedis, sleep, resp, LegacyRedisLock } = require('./helpers');
const { Client, LockLostError } = require('..');

const BRIDGE = { scheme: 'bridge', dialect: 'node-redis-lock' };
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

test('the legacy peer reads a bridge hold as its own kind of lock', async () => {
  const lock = await client.acquire('br:read', { ...BRIDGE, ttl: 2000 });
  const v = await r.call('GET', 'br:read');
  assert.match(v, /^\d{13}$/, 'a millisecond stamp');
  // ttl + 1 ms, moved on a little when needed to be unique to its holder.
  assert.ok(Number(v) > Date.now() + 1500 && Number(v) < Date.now() + 3000);
  await lock.release();
  assert.strictEqual(await r.call('EXISTS', 'br:read'), 0);
});

async function mixed(client, sock, key, ms) {
  let inside = 0;
  let overlaps = 0;
  let tslockRounds = 0;
  let legacyRounds = 0;
  const section = async () => {
    inside++;
    if (inside > 1) overlaps++;
    await sleep(1);
    inside--;
  };
  const until = Date.now() + ms;
  const tslockWorker = async () => {
    while (Date.now() < until) {
      const lock = await client.acquire(key, { ...BRIDGE, ttl: 1000, wait: 5000 });
      await section();
      await lock.release();
      tslockRounds++;
    }
  };
  const legacies = [];
  const legacyWorker = async () => {
    const peer = new LegacyRedisLock(await resp(sock), { timeout: 1000, retryDelay: 50 });
    legacies.push(peer);
    while (Date.now() < until) {
      const stamp = await peer.lock(key);
      await section();
      await peer.unlock(key, stamp);
      legacyRounds++;
    }
    peer.r.close();
  };
  await Promise.all([tslockWorker(), tslockWorker(), legacyWorker(), legacyWorker()]);
  const takeovers = legacies.reduce((n, p) => n + p.takeovers, 0);
  console.log(`bridge on ${key}: ${tslockRounds} tslock and ${legacyRounds} legacy rounds, ${overlaps} overlaps, ${takeovers} takeovers`);
  assert.strictEqual(overlaps, 0);
  assert.strictEqual(takeovers, 0, 'no lease ran out');
  // Both sides ran (how evenly is the retry delays' business, not this test's).
  assert.ok(tslockRounds > 0 && legacyRounds > 0, 'both sides ran');
}

test('0 overlaps beside legacy peers on one key', () => mixed(client, server.sock, 'br:mixed', 1500));

for (const version of ['2.0', '2.2', '2.6.0']) {
  test(`0 overlaps beside legacy peers through the proxy as Redis ${version}`, async (t) => {
    const old = await startOldRedis(server, version);
    if (!old) return t.skip('tests/oldredis not built');
    const c = Client.fromUrl(old.url);
    try {
      await mixed(c, old.sock, `br:old${version}`, 1000);
    } finally {
      c.close();
      old.stop();
    }
  });
}

test('a legacy takeover of an expired tslock hold is reported as loss', async () => {
  const key = 'br:takeover';
  const lock = await client.acquire(key, { ...BRIDGE, ttl: 300 });
  await sleep(450); // the holder stalls past its lease
  const peer = new LegacyRedisLock(await resp(server.sock), { timeout: 5000 });
  const stamp = await peer.lock(key);
  await assert.rejects(lock.extend(1000), LockLostError);
  assert.strictEqual(lock.held, false);
  assert.strictEqual(await r.call('GET', key), String(stamp), "the peer's hold is untouched");
  await peer.unlock(key, stamp);
  const lock2 = await client.acquire(key, { ...BRIDGE, ttl: 300 });
  await sleep(450);
  await r.call('DEL', key);
  await peer.lock(key);
  await assert.rejects(lock2.release(), LockLostError);
  await peer.unlock(key, Date.now() + 1000);
  peer.r.close();
});

test('a watched bridge hold tells JavaScript when a legacy peer took it', async () => {
  const key = 'br:watched';
  const lock = await client.acquire(key, { ...BRIDGE, ttl: 600 });
  let lost = null;
  await lock.watch({ interval: 150, onLost: (e) => (lost = e) });
  // The legacy side's blind overwrite, as a 0.0.x GETSET on a stamp it
  // misread would leave the key.
  await r.call('SET', key, String(Date.now() + 5001));
  for (let i = 0; i < 50 && !lost; i++) await sleep(20);
  assert.ok(lost instanceof LockLostError, String(lost));
  await r.call('DEL', key);
});
