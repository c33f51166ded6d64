// pack.test.js - npm pack's tarball installs into an empty directory
// (npm builds the addon with node-gyp against libtslock, here the tree's
// through TSLOCK_INCLUDE_DIR and TSLOCK_LIB_DIR) and locks there.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { startServer } = require('./helpers');

const npm = (() => {
  try {
    execFileSync('npm', ['--version'], { stdio: 'ignore' });
    return 'npm';
  } catch {
    return null;
  }
})();

test('npm pack, npm install into an empty directory, lock', { skip: !npm && 'no npm' }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tslock-pack.'));
  const server = await startServer();
  try {
    const quiet = ['--no-audit', '--no-fund', '--loglevel=error'];
    const tgz = execFileSync(npm, ['pack', '--silent', '--pack-destination', dir, ...quiet],
      { cwd: path.join(__dirname, '..'), encoding: 'utf8' }).trim().split('\n').pop();
    const app = path.join(dir, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), '{"name":"app","version":"1.0.0","private":true}\n');
    const nodedir = path.resolve(path.dirname(process.execPath), '..');
    execFileSync(npm, ['install', '--prefer-offline', ...quiet, path.join(dir, tgz)],
      { cwd: app, env: { ...process.env, npm_config_nodedir: nodedir }, stdio: ['ignore', 'ignore', 'inherit'] });
    const out = execFileSync(process.execPath, ['-e', `
      const { Client } = require('tslock');
      (async () => {
        const c = Client.fromUrl(${JSON.stringify(server.url)});
        const l = await c.acquire('pack:k', { ttl: 5000, fencing: true });
        await l.release();
        c.close();
        console.log('locked', l.fence);
      })();`], { cwd: app, encoding: 'utf8' });
    assert.strictEqual(out.trim(), 'locked 1');
  } finally {
    server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
