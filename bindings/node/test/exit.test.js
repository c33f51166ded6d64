// exit.test.js - a process that exits with locks held: it exits at once
// (a renewing watchdog does not keep it alive, nor, at process.exit(), a
// wait still pending), nothing is released for it, and its leases run out
// by themselves (doc/node.md).
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { spawn } = require('child_process');
const path = require('path');
const { startServer, sleep, resp } = require('./helpers');

const child = (url, how) => `
  const { Client } = require(${JSON.stringify(path.resolve(__dirname, '..'))});
  (async () => {
    const c = Client.fromUrl(${JSON.stringify(url)});
    await c.acquire('exit:plain', { ttl: 1500 });
    const w = await c.acquire('exit:watched', { ttl: 1500 });
    await w.watch({ interval: 100, onLost: () => {} });
    ${how === 'exit' ? "c.acquire('exit:plain', { wait: Infinity }).catch(() => {}); // a wait on its own thread" : ''}
    console.log('held');
    ${how === 'exit' ? 'process.exit(0);' : '/* the script ends */'}
  })();`;

for (const how of ['exit', 'end']) {
  test(`locks held at ${how === 'exit' ? 'process.exit()' : 'the end of the script'}`, async () => {
    const server = await startServer();
    const r = await resp(server.sock);
    try {
      const t0 = Date.now();
      const p = spawn(process.execPath, ['-e', child(server.url, how)], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      p.stdout.on('data', (d) => (out += d));
      const code = await new Promise((res) => p.on('exit', res));
      assert.strictEqual(code, 0);
      assert.strictEqual(out.trim(), 'held');
      assert.ok(Date.now() - t0 < 3000, 'the watchdog does not keep the process alive');
      assert.strictEqual(await r.call('EXISTS', 'exit:plain'), 1, 'not released for it');
      assert.strictEqual(await r.call('EXISTS', 'exit:watched'), 1);
      await sleep(1700);
      assert.strictEqual(await r.call('EXISTS', 'exit:plain'), 0, 'the lease ran out');
      assert.strictEqual(await r.call('EXISTS', 'exit:watched'), 0, 'renewal died with it');
    } finally {
      r.close();
      server.stop();
    }
  });
}
