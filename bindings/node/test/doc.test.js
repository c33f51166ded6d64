// doc.test.js - every ```js example of doc/node.md (the migration table's
// rows) run against a real redis-server, and type-checked by tsc --noEmit
// against index.d.ts when typescript is installed.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { startServer } = require('./helpers');
const tslock = require('..');

const top = process.env.TSLOCK_SRCDIR || path.resolve(__dirname, '../../..');
const page = fs.readFileSync(path.join(top, 'doc/node.md'), 'utf8');
const examples = [];
for (const m of page.matchAll(/^### (.+)\n[\s\S]*?```js\n([\s\S]*?)```/gm))
  examples.push({ title: m[1], code: m[2] });

const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor;
const requireTslock = (name) => (name === 'tslock' ? tslock : require(name));

test('doc/node.md has the migration rows', () => {
  assert.deepStrictEqual(examples.map((e) => e.title),
    ['redis-lock 0.0.x', 'redis-lock 0.1 and 1.0', 'node-redlock acquire', 'node-redlock using', 'errors']);
});

for (const ex of examples) {
  test(`doc/node.md: ${ex.title}`, async () => {
    const server = await startServer();
    try {
      const run = new AsyncFunction('require', 'url', 'Client', 'LockBusyError', 'console', ex.code);
      await run(requireTslock, server.url, tslock.Client, tslock.LockBusyError, { log() {} });
    } finally {
      server.stop();
    }
  });
}

const tsc = path.join(__dirname, '../node_modules/typescript/bin/tsc');
test('tsc --noEmit: the examples against index.d.ts', { skip: !fs.existsSync(tsc) && 'no typescript' }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tslock-tsc.'));
  try {
    const files = examples.map((ex, i) => {
      const f = path.join(dir, `example${i}.ts`);
      fs.writeFileSync(f, `import { Client, LockBusyError } from 'tslock';\n` +
        `export async function example(url: string): Promise<void> {\n${ex.code}}\n`);
      return f;
    });
    const config = {
      compilerOptions: {
        strict: true, noEmit: true, module: 'commonjs', target: 'es2022', skipLibCheck: true,
        types: ['node'], typeRoots: [path.join(__dirname, '../node_modules/@types')],
        baseUrl: dir, paths: { tslock: [path.join(__dirname, '../index.d.ts')] },
      },
      files,
    };
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(config));
    try {
      execFileSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8' });
    } catch (e) {
      assert.fail(`tsc:\n${e.stdout}${e.stderr}`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// The packages doc/node.md says the rows run beside are the ones the
// peers' lockfile installs (tests/node-peers/package.json).
test('doc/node.md names the npm versions tests/node-peers installs', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(top, 'tests/node-peers/package.json'), 'utf8'));
  const pinned = Object.values(pkg.dependencies)
    .map((spec) => /^npm:(redis-lock|redlock)@(.+)$/.exec(spec))
    .filter(Boolean);
  assert.ok(pinned.length >= 5, 'redis-lock and redlock versions pinned');
  for (const [, name, version] of pinned)
    assert.ok(page.includes(version), `doc/node.md names ${name} ${version}`);
});
