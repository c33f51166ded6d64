// bridge.test.js - tslock's bridge scheme in npm redis-lock 0.0.x's
// dialect: the stamp it writes, and a watched hold told when the key was
// overwritten.  peers.test.js runs it beside the published redis-lock.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { startServer, sleep, resp } = require('./helpers');
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
