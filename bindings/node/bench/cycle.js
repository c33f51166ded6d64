// cycle.js - make node-bench: the Node binding beside C in the same run,
// on one private redis-server: the uncontended acquire+release cycle
// (tests/bench_binding URL cycle N), 8 contended waiters (handoffs per
// second), the event loop's lag while 1,000 waits are pending, and a
// 100k-cycle memory check (the RSS after the cycles, against after a
// 10k warm-up).  Usage: node bench/cycle.js PATH/TO/bench_binding
'use strict';
const { execFileSync } = require('child_process');
const { monitorEventLoopDelay } = require('perf_hooks');
const { startServer, sleep } = require('../test/helpers');
const { Client } = require('..');

const cbench = process.argv[2];
const N = Number(process.env.TSLOCK_BENCH_CYCLES || 20000);
const MEM = Number(process.env.TSLOCK_MEM_CYCLES || 100000);

async function cycles(client, key, n) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await (await client.acquire(key)).release();
  return Number(process.hrtime.bigint() - t0) / n;
}

async function contend(client, key, threads, ms) {
  let total = 0;
  const until = Date.now() + ms;
  await Promise.all(Array.from({ length: threads }, async () => {
    while (Date.now() < until) {
      await (await client.acquire(key, { wait: Infinity })).release();
      total++;
    }
  }));
  return (total * 1000) / ms;
}

(async () => {
  const server = await startServer();
  const client = Client.fromUrl(server.url);
  let failed = false;
  try {
    await cycles(client, 'bench:warm', 2000);
    const c = Number(execFileSync(cbench, [server.url, 'cycle', String(N)], { encoding: 'utf8' }));
    const js = await cycles(client, 'bench:cycle', N);
    console.log(`uncontended cycle: C ${(c / 1000).toFixed(1)} us, node ${(js / 1000).toFixed(1)} us, ${(js / c).toFixed(2)}x`);
    const cc = Number(execFileSync(cbench, [server.url, 'contend', '8', '2000', 'bench:c8'], { encoding: 'utf8' }));
    const jc = await contend(client, 'bench:n8', 8, 2000);
    console.log(`8 contended waiters: C ${cc.toFixed(0)}/s, node ${jc.toFixed(0)}/s handoffs`);

    const holder = await client.acquire('bench:lag', { ttl: 30000 });
    const acs = [];
    const waits = [];
    for (let i = 0; i < 1000; i++) {
      const ac = new AbortController();
      acs.push(ac);
      waits.push(client.acquire('bench:lag', { wait: Infinity, signal: ac.signal }).catch(() => {}));
    }
    await sleep(200);
    const h = monitorEventLoopDelay({ resolution: 5 });
    h.enable();
    await sleep(1000);
    h.disable();
    console.log(`event loop lag with 1000 waits pending: p50 ${(h.percentile(50) / 1e6).toFixed(1)} ms, ` +
      `p99 ${(h.percentile(99) / 1e6).toFixed(1)} ms, max ${(h.max / 1e6).toFixed(1)} ms`);
    for (const ac of acs) ac.abort();
    await Promise.all(waits);
    await holder.release();

    await cycles(client, 'bench:mem', 10000);
    global.gc && global.gc();
    const before = process.memoryUsage().rss;
    const per = await cycles(client, 'bench:mem', MEM);
    global.gc && global.gc();
    await sleep(100);
    const grew = (process.memoryUsage().rss - before) / 1048576;
    console.log(`memory: ${MEM} cycles (${(per / 1000).toFixed(1)} us each), RSS grew ${grew.toFixed(1)} MiB`);
    if (grew > 16) {
      console.log('FAIL: the RSS grew more than 16 MiB');
      failed = true;
    }
  } finally {
    client.close();
    server.stop();
  }
  process.exit(failed ? 1 : 0);
})();
