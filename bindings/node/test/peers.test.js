// peers.test.js - tslock beside the lock libraries as npm publishes them,
// installed by npm ci from tests/node-peers' lockfile (test_node.sh names
// their node_modules in TSLOCK_NODE_PEERS): redis-lock 0.0.9, 0.1.4 and
// 1.0.0 beside tslock's bridge scheme in the node-redis-lock dialect, and
// redlock 4 and 5 beside its token scheme, each on one key.
//
// Who is inside is counted in this one process, where it is exact.  An
// overlap is blamed as tests/test_dialects.c blames it: on the side whose
// lease had run out when the other came in (a tslock hold taken over so
// must have its release report the loss), on the legacy library when its
// blind DEL removed the key another held, and on tslock otherwise.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const { startServer, startOldRedis, sleep, resp } = require('./helpers');
const { Client, LockLostError, LockBusyError } = require('..');

const PEERS = process.env.TSLOCK_NODE_PEERS;
const peer = (name) => require(path.join(PEERS, name));
const BRIDGE = { scheme: 'bridge', dialect: 'node-redis-lock' };

let server;
test.before(async () => {
  if (PEERS) server = await startServer();
});
test.after(() => server && server.stop());

// ------------------------------------------------------------ the count

class Count {
  constructor() {
    this.inside = new Set(); // {who, leaseEnd, tainted, takenOver}
    this.overlaps = 0; // caused by tslock: 0 is the claim
    this.blindDel = 0; // beside a holder whose key a legacy DEL removed
    this.pastLease = { tslock: 0, legacy: 0 }; // beside a holder past its lease
    this.takenOver = { tslock: 0, legacy: 0 }; // holders entered on so
  }
  enter(who, leaseEnd) {
    const h = { who, leaseEnd, tainted: false, takenOver: false };
    const now = Date.now();
    for (const o of this.inside) {
      if (now >= o.leaseEnd) {
        // Its lease ran out while it stayed inside: a takeover, allowed
        // (a tslock holder must then be told of its loss).
        this.pastLease[o.who]++;
        if (!o.takenOver) this.takenOver[o.who]++;
        o.takenOver = true;
      } else if (o.tainted) {
        this.blindDel++;
      } else {
        this.overlaps++;
      }
    }
    this.inside.add(h);
    return h;
  }
  leave(h) {
    this.inside.delete(h);
  }
  // A legacy DEL (no owner check) while others are inside removes their key.
  legacyDel() {
    for (const o of this.inside) o.tainted = true;
  }
}

// ------------------------------------------------- the legacy adapters

// The stamp a redis-lock client wrote last: its own lease (stamp - 1 ms,
// the +1 convention) once its lock call has resolved.  Its DELs are seen
// so a blind one can be blamed on it.
function watchClient(client, count) {
  const seen = { stamp: 0 };
  for (const m of ['setnx', 'getset', 'set']) {
    const orig = client[m];
    client[m] = function (key, value, ...rest) {
      seen.stamp = Number(value);
      return orig.call(this, key, value, ...rest);
    };
  }
  const del = client.del;
  client.del = function (...args) {
    count.legacyDel();
    return del.apply(this, args);
  };
  return seen;
}

async function redis3(sock) {
  const c = peer('redis-3').createClient({ path: sock });
  await new Promise((res, rej) => {
    c.once('ready', res);
    c.once('error', rej);
  });
  return { client: c, close: () => c.quit() };
}

async function redis4(sock) {
  const c = peer('redis-4').createClient({ socket: { path: sock } });
  await c.connect();
  return { client: c, close: () => c.quit() };
}

// Each legacy library as lock(name, timeout) => {leaseEnd, unlock()}.
const REDIS_LOCK = {
  '0.0.9': {
    pkg: 'redis-lock-009',
    conn: redis3,
    px: false,
    make(client, retryDelay, seen) {
      const lock = peer('redis-lock-009')(client, retryDelay);
      return (name, timeout) =>
        new Promise((res) =>
          lock(name, timeout, (done) =>
            res({ leaseEnd: seen.stamp - 1, unlock: () => new Promise((r) => done(r)) })));
    },
  },
  '0.1.4': {
    pkg: 'redis-lock-014',
    conn: redis3,
    px: true,
    make(client, retryDelay, seen) {
      const lock = peer('redis-lock-014')(client, retryDelay);
      return (name, timeout) =>
        new Promise((res) =>
          lock(name, timeout, (done) => res({ leaseEnd: seen.stamp - 1, unlock: () => done() })));
    },
  },
  '1.0.0': {
    pkg: 'redis-lock-100',
    conn: redis4,
    px: true,
    make(client, retryDelay, seen) {
      const lock = peer('redis-lock-100')(client, retryDelay);
      return async (name, timeout) => {
        const unlock = await lock(name, timeout);
        return { leaseEnd: seen.stamp - 1, unlock };
      };
    },
  },
};

// ------------------------------------------------------ the mixed run

// A legacy worker, connected, waits here for the run's clock to start.
async function started(until) {
  while (until.at === Infinity) await sleep(1);
}

// Two tslock workers and two of the peer's on one key for about ms:
// sections of 1 ms, and once each side a holder that stalls past its
// lease (ttl 300 ms, stalls 450 ms), so takeovers happen both ways.
async function mixed({ client, key, ttl = 300, ms = 1200, opts, legacyWorker, label, stall = true }) {
  const count = new Count();
  const stats = { tslock: 0, legacy: 0, lost: 0, unreported: 0 };
  // The clock starts once every legacy worker has connected (a slow
  // connect under load must not leave a side without its rounds).
  const until = { at: Infinity, ready: null };
  let ready = 0;
  const allReady = new Promise((res) => (until.ready = () => ++ready === 2 && res()));
  let tslockStalled = !stall;
  const tslockWorker = async () => {
    await allReady;
    do {
      const lock = await client.acquire(key, { ...opts, ttl, wait: 10000 });
      const h = count.enter('tslock', lock.expires);
      const stall = !tslockStalled;
      tslockStalled = true;
      await sleep(stall ? ttl + 150 : 1);
      count.leave(h);
      const err = await lock.release().then(() => null, (e) => e);
      if (err && !(err instanceof LockLostError)) throw err;
      if (err) stats.lost++;
      // A hold another came into after its lease ran out must be lost.
      if (h.takenOver && !err) stats.unreported++;
      stats.tslock++;
    } while (Date.now() < until.at);
  };
  const legacy = { stalled: !stall };
  const section = async (leaseEnd, stall) => {
    const h = count.enter('legacy', leaseEnd);
    await sleep(stall ? ttl + 150 : 1);
    count.leave(h);
    stats.legacy++;
  };
  allReady.then(() => (until.at = Date.now() + ms));
  await Promise.all([tslockWorker(), tslockWorker(),
    legacyWorker(count, section, legacy, until, ttl), legacyWorker(count, section, legacy, until, ttl)]);
  console.log(`${label} on ${key}: ${stats.tslock} tslock and ${stats.legacy} legacy rounds; ` +
    `overlaps: ${count.overlaps} caused by tslock, ${count.blindDel} after a legacy DEL of another's key, ` +
    `${count.pastLease.legacy} beside a legacy holder past its lease, ${count.pastLease.tslock} beside a tslock ` +
    `holder past its lease; taken over after their lease: ${count.takenOver.legacy} legacy holds, ` +
    `${count.takenOver.tslock} tslock holds (${stats.lost} tslock releases reported the loss)`);
  return { count, stats };
}

function redisLockWorker(v, sock, name) {
  const kind = REDIS_LOCK[v];
  return async (count, section, legacy, until, ttl) => {
    const { client, close } = await kind.conn(sock);
    const seen = watchClient(client, count);
    const lock = kind.make(client, 50, seen);
    until.ready();
    await started(until);
    try {
      do {
        const { leaseEnd, unlock } = await lock(name, ttl);
        const stall = !legacy.stalled;
        legacy.stalled = true;
        await section(leaseEnd, stall);
        await unlock();
      } while (Date.now() < until.at);
    } finally {
      await close();
    }
  };
}

// Whether a server (or the proxy playing an old one) takes SET's options,
// which redis-lock 0.1 and 1.0 need: Redis 2.6.12 and later.
async function takesSetPx(sock) {
  const r = await resp(sock);
  try {
    await r.call('SET', 'peers:probe', '1', 'PX', '1000', 'NX');
    return true;
  } catch (e) {
    return e.message;
  } finally {
    r.close();
  }
}

function checkMixed({ count, stats }) {
  assert.strictEqual(count.overlaps, 0, 'no overlap caused by tslock');
  assert.strictEqual(stats.unreported, 0, 'every tslock hold taken over reported its loss');
  assert.ok(stats.tslock > 0 && stats.legacy > 0, 'both sides ran');
}

const TARGETS = ['7.0', '2.0', '2.2', '2.6.0'];
for (const v of Object.keys(REDIS_LOCK)) {
  for (const target of TARGETS) {
    test(`bridge beside npm redis-lock ${v} on Redis ${target}`, async (t) => {
      if (!PEERS) return t.skip('no TSLOCK_NODE_PEERS (npm ci in tests/node-peers)');
      const old = target === '7.0' ? null : await startOldRedis(server, target);
      if (target !== '7.0' && !old) return t.skip('tests/oldredis not built');
      const sock = old ? old.sock : server.sock;
      const c = Client.fromUrl(`unix://${sock}`);
      try {
        const px = await takesSetPx(sock);
        if (REDIS_LOCK[v].px && px !== true) {
          // The library cannot lock there at all: every SET ... PX NX fails.
          assert.match(px, /ERR/);
          console.log(`redis-lock ${v} cannot run on Redis ${target}: its SET ... PX ... NX is answered "${px}" (SET takes options from 2.6.12)`);
          return;
        }
        const name = `mixed:${v}:${target}`;
        const res = await mixed({
          client: c, key: `lock.${name}`, opts: BRIDGE, label: `redis-lock ${v}`,
          legacyWorker: redisLockWorker(v, sock, name),
        });
        checkMixed(res);
        // The legacy stall was taken over by tslock, the tslock stall by someone.
        assert.ok(res.count.takenOver.legacy + res.count.takenOver.tslock >= 1, 'a stalled holder was taken over');
      } finally {
        c.close();
        if (old) old.stop();
      }
    });
  }
}

for (const v of Object.keys(REDIS_LOCK)) {
  test(`a redis-lock ${v} takeover of an expired bridge hold is reported as loss`, async (t) => {
    if (!PEERS) return t.skip('no TSLOCK_NODE_PEERS');
    const name = `takeover:${v}`;
    const key = `lock.${name}`;
    const c = Client.fromUrl(server.url);
    const kind = REDIS_LOCK[v];
    const { client, close } = await kind.conn(server.sock);
    const r = await resp(server.sock);
    try {
      const seen = watchClient(client, new Count());
      const lock = kind.make(client, 20, seen);
      const held = await c.acquire(key, { ...BRIDGE, ttl: 300 });
      // The peer waits, then takes the key once tslock's lease has run out
      // (0.0.9 by GETSET of the expired stamp or SETNX once the key's TTL
      // ended, 0.1 and 1.0 by SET NX PX once it ended).
      const got = await lock(name, 5000);
      assert.ok(Date.now() >= held.expires, 'not before the lease ran out');
      await assert.rejects(held.release(), LockLostError);
      assert.strictEqual(held.held, false);
      assert.strictEqual(await r.call('GET', key), String(seen.stamp), "the peer's hold is untouched");
      await got.unlock();
      assert.strictEqual(await r.call('EXISTS', key), 0);
    } finally {
      r.close();
      await close();
      c.close();
    }
  });
}

// redis-lock's release is a DEL without an owner check, sent while its
// own stamp has not run out.  One that reaches the server late (held back
// here until tslock holds, as a slow network would) deletes tslock's hold:
// tslock's release then reports the loss instead of a success.
for (const v of Object.keys(REDIS_LOCK)) {
  test(`a late redis-lock ${v} DEL of a bridge hold is reported as loss`, async (t) => {
    if (!PEERS) return t.skip('no TSLOCK_NODE_PEERS');
    const name = `lateDel:${v}`;
    const key = `lock.${name}`;
    const c = Client.fromUrl(server.url);
    const kind = REDIS_LOCK[v];
    const { client, close } = await kind.conn(server.sock);
    const r = await resp(server.sock);
    try {
      const seen = watchClient(client, new Count());
      const got = await kind.make(client, 20, seen)(name, 300);
      let open;
      const gate = new Promise((res) => (open = res));
      const del = client.del;
      client.del = function (...args) {
        return gate.then(() => del.apply(this, args));
      };
      const unlocked = got.unlock(); // its stamp is still good: it DELs
      const held = await c.acquire(key, { ...BRIDGE, ttl: 5000, wait: 5000 });
      assert.ok(Date.now() >= got.leaseEnd, "tslock came in after the peer's lease");
      assert.strictEqual(await r.call('GET', key), held.value);
      open();
      await unlocked;
      assert.strictEqual(await r.call('EXISTS', key), 0, "the peer's DEL removed tslock's hold");
      await assert.rejects(held.release(), LockLostError);
      assert.strictEqual(held.held, false);
    } finally {
      r.close();
      await close();
      c.close();
    }
  });
}

// The count's control: a peer that enters without any lock is caught.
test('a peer that ignores the lock is counted as an overlap', async (t) => {
  if (!PEERS) return t.skip('no TSLOCK_NODE_PEERS');
  const c = Client.fromUrl(server.url);
  try {
    const res = await mixed({
      client: c, key: 'reckless', opts: BRIDGE, ms: 300, label: 'a reckless peer',
      legacyWorker: async (count, section, legacy, until) => {
        until.ready();
        await started(until);
        do await section(Date.now() + 10000, false);
        while (Date.now() < until.at);
      },
    });
    assert.ok(res.count.overlaps > 0, 'the reckless peer overlapped tslock');
  } finally {
    c.close();
  }
});

// ------------------------------------------------------------- redlock

const REDLOCK = {
  '4.2.0': (client) => {
    const Redlock = peer('redlock-4');
    const rl = new Redlock([client], { retryCount: -1, retryDelay: 20, retryJitter: 10 });
    return async (key, ttl) => {
      const l = await rl.lock(key, ttl);
      return { leaseEnd: l.expiration, unlock: () => l.unlock() };
    };
  },
  '5.0.0-beta.2': (client) => {
    const Redlock = peer('redlock-5').default;
    const rl = new Redlock([client], { retryCount: -1, retryDelay: 20, retryJitter: 10 });
    return async (key, ttl) => {
      const l = await rl.acquire([key], ttl);
      return { leaseEnd: l.expiration, unlock: () => l.release() };
    };
  },
};

for (const v of Object.keys(REDLOCK)) {
  test(`token beside npm redlock ${v} on one key`, async (t) => {
    if (!PEERS) return t.skip('no TSLOCK_NODE_PEERS');
    const c = Client.fromUrl(server.url);
    const key = `redlock:${v}`;
    try {
      const res = await mixed({
        client: c, key, opts: { scheme: 'token' }, ttl: 1000, stall: false, label: `redlock ${v}`,
        legacyWorker: async (count, section, legacy, until, ttl) => {
          const Redis = peer('ioredis');
          const client = new Redis({ path: server.sock, lazyConnect: true, maxRetriesPerRequest: 0 });
          await client.connect();
          const lock = REDLOCK[v](client);
          until.ready();
          await started(until);
          try {
            do {
              const { leaseEnd, unlock } = await lock(key, ttl);
              await section(leaseEnd, false);
              await unlock();
            } while (Date.now() < until.at);
          } finally {
            client.disconnect();
          }
        },
      });
      checkMixed(res);
      assert.strictEqual(res.count.blindDel, 0);
    } finally {
      c.close();
    }
  });
}

// ------------------------------------ doc/node.md's migration table, row by row

// Each row's tslock call and the legacy call it replaces, on one key, as
// the published package makes it: neither gets in while the other holds.
// Ordered by events: the legacy call waiting on tslock's hold may only
// resolve after tslock's release; tslock's try while the legacy one holds
// is LockBusyError, and succeeds once it released.
async function excludeEachOther({ key, tslockOpts, legacyTake }) {
  const c = Client.fromUrl(server.url);
  try {
    const held = await c.acquire(key, { ...tslockOpts, ttl: 5000 });
    let released = false;
    const waiting = legacyTake().then((l) => {
      assert.ok(released, 'the legacy call got in only after tslock released');
      return l;
    });
    await sleep(100); // let the legacy call try and retry
    released = true;
    await held.release();
    const legacy = await waiting;
    await assert.rejects(c.acquire(key, { ...tslockOpts, ttl: 5000 }), LockBusyError);
    await legacy.release();
    await (await c.acquire(key, { ...tslockOpts, ttl: 5000 })).release();
  } finally {
    c.close();
  }
}

const ROWS = [
  ['npm redis-lock 0.0.x', '0.0.9', BRIDGE],
  ['npm redis-lock 0.1 / 1.0 (bridge while old clients run)', '0.1.4', BRIDGE],
  ['npm redis-lock 0.1 / 1.0 (bridge while old clients run)', '1.0.0', BRIDGE],
  ['npm redis-lock 0.1 / 1.0 (then the token scheme)', '1.0.0', { scheme: 'token' }],
];
for (const [row, v, opts] of ROWS) {
  test(`migration row "${row}": beside redis-lock ${v}`, async (t) => {
    if (!PEERS) return t.skip('no TSLOCK_NODE_PEERS');
    const kind = REDIS_LOCK[v];
    const { client, close } = await kind.conn(server.sock);
    try {
      const lock = kind.make(client, 20, watchClient(client, new Count()));
      const name = `row:${v}:${opts.scheme}`;
      await excludeEachOther({
        key: `lock.${name}`, tslockOpts: opts,
        legacyTake: async () => {
          const got = await lock(name, 5000);
          return { release: got.unlock };
        },
      });
    } finally {
      await close();
    }
  });
}

for (const v of Object.keys(REDLOCK)) {
  test(`migration rows "node-redlock": redlock ${v}'s acquire, release, extend, using and errors`, async (t) => {
    if (!PEERS) return t.skip('no TSLOCK_NODE_PEERS');
    const Redis = peer('ioredis');
    const rc = new Redis({ path: server.sock, lazyConnect: true });
    await rc.connect();
    const c = Client.fromUrl(server.url);
    try {
      const lock = REDLOCK[v](rc);
      const key = `row:redlock:${v}`;
      await excludeEachOther({
        key, tslockOpts: { ttl: 5000 },
        legacyTake: async () => {
          const got = await lock(key, 5000);
          return { release: got.unlock };
        },
      });
      // redlock's "not acquired" while tslock holds is LockBusyError's row.
      const Redlock = v.startsWith('4') ? peer('redlock-4') : peer('redlock-5').default;
      const once = new Redlock([rc], { retryCount: 0 });
      const held = await c.acquire(key, { ttl: 5000 });
      const take = v.startsWith('4') ? once.lock(key, 1000) : once.acquire([key], 1000);
      const e = await take.then(() => null, (x) => x);
      assert.ok(e && /LockError|ExecutionError/.test(e.name || e.constructor.name), String(e));
      // tslock's extend keeps the key from redlock; using() likewise.
      await held.extend(5000);
      assert.ok(await (v.startsWith('4') ? once.lock(key, 1000) : once.acquire([key], 1000)).then(() => false, () => true));
      await held.release();
      await c.using(key, { ttl: 2000 }, async (signal) => {
        assert.strictEqual(signal.aborted, false);
        assert.ok(await (v.startsWith('4') ? once.lock(key, 1000) : once.acquire([key], 1000)).then(() => false, () => true),
          'redlock is kept out while using() runs');
      });
      const after = await (v.startsWith('4') ? once.lock(key, 1000) : once.acquire([key], 1000));
      await (v.startsWith('4') ? after.unlock() : after.release());
    } finally {
      c.close();
      rc.disconnect();
    }
  });
}
