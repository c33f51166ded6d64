// index.js - the tslock package: Client, Lock and the errors, over the
// addon in build/Release.  Options are named here and passed through;
// every lock decision (takeover, release, renewal, waiting) is
// libtslock's.  Calls that talk to Redis run on the libuv thread pool.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const native = require('../build/Release/tslock.node');
const errors = require('./errors');

const { fromNative, LockCanceledError, TslockInvalidError } = errors;
const SCHEMES = { auto: 0, timestamp: 1, token: 2, bridge: 3 };
const UNITS = { ms: 0, s: 1, float: 2 };
const RW = { exclusive: 1, shared: 2 };

function codeOf(name) {
  return native.errors()[name].code;
}

function invalid(detail) {
  const code = codeOf('TSLOCK_EINVAL');
  return new TslockInvalidError(`invalid argument: ${detail}`, code, 'TSLOCK_EINVAL', detail);
}

function canceled(signal) {
  const code = codeOf('TSLOCK_ECANCELED');
  const e = new LockCanceledError('wait was canceled', code, 'TSLOCK_ECANCELED', 'aborted');
  e.cause = signal && signal.reason;
  return e;
}

function pick(table, value, what) {
  if (value === undefined) return -1;
  if (!(value in table)) throw invalid(`${what} must be one of ${Object.keys(table).join(', ')}`);
  return table[value];
}

// ioredis' `tls` options as tslock_tls_set() names them.  ca, cert and key
// are PEM text (strings or Buffers, as ioredis takes them), written to a
// private directory because libtslock reads files when it connects.
function tlsSettings(tls) {
  if (!tls) return null;
  const out = {};
  let dir = null;
  const file = (name, pem) => {
    if (Array.isArray(pem)) pem = pem.map(String).join('\n');
    pem = String(pem);
    if (!pem.includes('-----BEGIN')) return pem; // a path
    dir = dir || fs.mkdtempSync(path.join(os.tmpdir(), 'tslock-tls-'));
    const p = path.join(dir, name);
    fs.writeFileSync(p, pem, { mode: 0o600 });
    return p;
  };
  if (tls.ca) out.cacert = file('ca.pem', tls.ca);
  if (tls.cert) out.cert = file('cert.pem', tls.cert);
  if (tls.key) out.key = file('key.pem', tls.key);
  if (tls.passphrase) out.key_password = String(tls.passphrase);
  if (tls.servername) out.sni = String(tls.servername);
  out.verify = tls.rejectUnauthorized === false ? 'none' : 'required';
  return { settings: out, dir };
}

/** One held lock: release(), extend(ttl), fence. */
class Lock {
  constructor(client, name, nativeLock, hold) {
    this.client = client;
    this.name = name;
    this._native = nativeLock;
    this._chain = Promise.resolve();
    this.held = true;
    this._set(hold);
  }

  _set(hold) {
    this.value = hold.value;
    this.fence = hold.fence;
    this.expires = hold.expires;
    this.scheme = Object.keys(SCHEMES).find((k) => SCHEMES[k] === hold.scheme);
  }

  // One call at a time on a lock, in the order made.
  _run(fn) {
    const p = this._chain.then(fn);
    this._chain = p.catch(() => {});
    return p.catch((e) => {
      throw fromNative(e);
    });
  }

  /** Release: deletes the key only while it is still ours. */
  release() {
    return this._run(async () => {
      try {
        await this._native.release();
        this.held = false;
      } catch (e) {
        if (e.errname === 'TSLOCK_ELOST') this.held = false;
        throw e;
      }
    });
  }

  /** Set the lease to ttl ms from now (0: the lock's ttl), while ours. */
  extend(ttl = 0) {
    return this._run(async () => {
      try {
        this._set(await this._native.extend(ttl));
      } catch (e) {
        if (e.errname === 'TSLOCK_ELOST') this.held = false;
        throw e;
      }
    });
  }

  /** Keep renewing from libtslock's watchdog thread until released;
   * onLost(err) is called once if a renewal fails (err a TslockError). */
  watch({ interval = 0, onLost } = {}) {
    const cb = (e) => {
      this.held = false;
      if (onLost) onLost(fromNative(e));
    };
    return this._run(() => this._native.watch(interval, cb));
  }

  /** Live holders of a shared lock or semaphore. */
  holders() {
    return this._run(() => this._native.holders());
  }
}

class Client {
  constructor(nativeClient, tlsDir) {
    this._native = nativeClient;
    this._tlsDir = tlsDir;
  }

  /** A client for a redis://, rediss://, unix:// or redis+sentinel:// URL
   * (libtslock's parser); tls: ioredis' `tls` options. */
  static fromUrl(url, { tls } = {}) {
    const t = tlsSettings(tls);
    try {
      return new Client(new native.NativeClient(url, t ? t.settings : undefined), t && t.dir);
    } catch (e) {
      throw fromNative(e);
    }
  }

  _native_lock(name, opts) {
    if (typeof name !== 'string' || !name) throw invalid('name must be a non-empty string');
    const o = {
      ttl: opts.ttl,
      scheme: pick(SCHEMES, opts.scheme, 'scheme'),
      unit: pick(UNITS, opts.unit, 'unit'),
      rw: pick(RW, opts.rw, 'rw'),
      permits: opts.permits,
      fair: !!opts.fair,
      fencing: !!opts.fencing,
      dialect: opts.dialect,
    };
    if (o.ttl !== undefined && !(Number.isInteger(o.ttl) && o.ttl > 0))
      throw invalid('ttl must be a positive integer (ms)');
    try {
      return new native.NativeLock(this._native, name, o);
    } catch (e) {
      throw fromNative(e);
    }
  }

  /** Take the lock, waiting up to opts.wait ms (0: try once, Infinity:
   * until taken or aborted); resolves with a held Lock, rejects with a
   * TslockError (LockBusyError when the wait ran out). */
  async acquire(name, opts = {}) {
    const { signal } = opts;
    const n = this._native_lock(name, opts);
    if (signal && signal.aborted) throw canceled(signal);
    let wait = opts.wait === undefined ? 0 : opts.wait;
    if (wait === Infinity) wait = -1;
    else if (!(Number.isInteger(wait) && wait >= 0)) throw invalid('wait must be ms or Infinity');
    const onAbort = () => n.cancel();
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
    try {
      return new Lock(this, name, n, await n.acquire(wait));
    } catch (e) {
      const err = fromNative(e);
      if (err instanceof LockCanceledError && signal) err.cause = signal.reason;
      throw err;
    } finally {
      if (signal) signal.removeEventListener('abort', onAbort);
    }
  }

  /** node-redlock's using(): hold name while routine(signal) runs,
   * renewing it (renew: true, or the interval in ms; false for none);
   * signal aborts with a LockLostError if the lock is lost. */
  async using(name, opts, routine) {
    if (typeof opts === 'function') [opts, routine] = [{}, opts];
    const lock = await this.acquire(name, opts);
    const ac = new AbortController();
    const renew = opts.renew === undefined ? true : opts.renew;
    let result;
    let failed = false;
    try {
      if (renew !== false)
        await lock.watch({ interval: renew === true ? 0 : renew, onLost: (e) => ac.abort(e) });
      result = await routine(ac.signal);
    } catch (e) {
      failed = true;
      throw e;
    } finally {
      try {
        await lock.release();
      } catch (e) {
        if (!failed) throw ac.signal.aborted ? ac.signal.reason : e;
      }
    }
    if (ac.signal.aborted) throw ac.signal.reason;
    return result;
  }

  /** Close idle connections; held locks keep theirs until released. */
  close() {
    this._native.close();
    if (this._tlsDir) fs.rmSync(this._tlsDir, { recursive: true, force: true });
    this._tlsDir = null;
  }
}

module.exports = {
  Client,
  Lock,
  version: native.version,
  dialects: native.dialects,
  ...errors,
};
delete module.exports.fromNative;
