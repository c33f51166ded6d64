// helpers.js - what the node:test files share: a private redis-server on
// a Unix socket in a temporary directory (stopped by its pid), and a
// plain RESP client over net.Socket for the checks.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');

async function startServer() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tslock-node.'));
  const sock = path.join(dir, 'redis.sock');
  const bin = process.env.REDIS_SERVER || 'redis-server';
  const proc = spawn(bin, ['--port', '0', '--unixsocket', sock, '--unixsocketperm', '700',
    '--dir', dir, '--save', '', '--appendonly', 'no',
    // 1,000 waits connect at once (waits.test.js): a Unix socket refuses
    // connections past the listen backlog (EAGAIN) instead of retrying.
    '--tcp-backlog', '2048'], { stdio: 'ignore' });
  for (let i = 0; i < 200 && !fs.existsSync(sock); i++) await sleep(25);
  const r = new Resp(sock);
  for (let i = 0; ; i++) {
    try {
      await r.connect();
      await r.call('PING');
      break;
    } catch (e) {
      if (i > 100) throw e;
      await sleep(25);
    }
  }
  r.close();
  return {
    dir,
    sock,
    url: `unix://${sock}`,
    stop() {
      proc.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

// tests/oldredis in front of a server, answering as Redis `version`;
// null when the proxy is not built.
async function startOldRedis(server, version) {
  const bin = process.env.TSLOCK_OLDREDIS;
  if (!bin || !fs.existsSync(bin)) return null;
  const sock = path.join(server.dir, `redis-${version}.sock`);
  const proc = spawn(bin, ['--emulate', version, '--listen', sock, '--upstream', server.sock,
    '--ready-fd', '3'], { stdio: ['ignore', 'inherit', 'inherit', 'pipe'] });
  const line = await new Promise((resolve) => {
    let got = '';
    proc.stdio[3].on('data', (d) => {
      got += d;
      if (got.includes('\n')) resolve(got);
    });
    proc.on('exit', () => resolve(got));
  });
  if (!line.startsWith('ready')) throw new Error(`oldredis --emulate ${version}: ${line}`);
  proc.stdio[3].destroy();
  return { sock, url: `unix://${sock}`, stop: () => proc.kill('SIGTERM') };
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

// A few lines of RESP: commands out as arrays of bulk strings, replies
// parsed back into strings, numbers, null, arrays, or Errors.
class Resp {
  constructor(sock) {
    this.sock = sock;
    this.buf = Buffer.alloc(0);
    this.waiting = [];
  }
  connect() {
    return new Promise((resolve, reject) => {
      this.s = net.createConnection(this.sock, resolve);
      this.s.once('error', reject);
      this.s.on('data', (d) => {
        this.buf = Buffer.concat([this.buf, d]);
        for (;;) {
          const r = this.parse(0);
          if (!r) break;
          this.buf = this.buf.subarray(r[1]);
          const w = this.waiting.shift();
          if (r[0] instanceof Error) w.reject(r[0]);
          else w.resolve(r[0]);
        }
      });
    });
  }
  parse(at) {
    const eol = this.buf.indexOf('\r\n', at);
    if (eol < 0) return null;
    const type = String.fromCharCode(this.buf[at]);
    const line = this.buf.toString('utf8', at + 1, eol);
    const next = eol + 2;
    if (type === '+') return [line, next];
    if (type === '-') return [new Error(line), next];
    if (type === ':') return [Number(line), next];
    if (type === '$') {
      const n = Number(line);
      if (n < 0) return [null, next];
      if (this.buf.length < next + n + 2) return null;
      return [this.buf.toString('utf8', next, next + n), next + n + 2];
    }
    if (type === '*') {
      const n = Number(line);
      if (n < 0) return [null, next];
      const out = [];
      let pos = next;
      for (let i = 0; i < n; i++) {
        const r = this.parse(pos);
        if (!r) return null;
        out.push(r[0]);
        pos = r[1];
      }
      return [out, pos];
    }
    throw new Error(`RESP: unexpected ${type}`);
  }
  call(...args) {
    let out = `*${args.length}\r\n`;
    for (const a of args) out += `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`;
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.s.write(out);
    });
  }
  close() {
    if (this.s) this.s.destroy();
  }
}

async function resp(sock) {
  const r = new Resp(sock);
  await r.connect();
  return r;
}

module.exports = { startServer, startOldRedis, sleep, Resp, resp };
