// errors.js - TslockError and its subclasses, one per kind of outcome,
// each carrying the library's code (a negative TSLOCK_E* number) and
// its name from tslock_errname().
'use strict';

class TslockError extends Error {
  constructor(message, code, errname, detail) {
    super(message);
    this.name = this.constructor.name;
    this.code = code;
    this.errname = errname;
    this.detail = detail || '';
  }
}
/** The lock is held by another owner (TSLOCK_EBUSY, TSLOCK_EUNREADABLE). */
class LockBusyError extends TslockError {}
/** The lease ran out or another owner took the lock (TSLOCK_ELOST). */
class LockLostError extends TslockError {}
/** The wait was canceled by its AbortSignal (TSLOCK_ECANCELED). */
class LockCanceledError extends TslockError {}
/** The server could not be reached or spoken to (EIO, ETIMEDOUT, ...). */
class TslockConnectionError extends TslockError {}
/** A bad argument or option (TSLOCK_EINVAL). */
class TslockInvalidError extends TslockError {}

const byName = {
  TSLOCK_EBUSY: LockBusyError,
  TSLOCK_EUNREADABLE: LockBusyError,
  TSLOCK_ELOST: LockLostError,
  TSLOCK_ECANCELED: LockCanceledError,
  TSLOCK_EIO: TslockConnectionError,
  TSLOCK_ETIMEDOUT: TslockConnectionError,
  TSLOCK_EPROTO: TslockConnectionError,
  TSLOCK_EAUTH: TslockConnectionError,
  TSLOCK_ETLS: TslockConnectionError,
  TSLOCK_EINVAL: TslockInvalidError,
};

/** The TslockError for an Error the addon threw or rejected with. */
function fromNative(e) {
  if (e instanceof TslockError || typeof e.errname !== 'string') return e;
  const Cls = byName[e.errname] || TslockError;
  return new Cls(e.message, e.code, e.errname, e.detail);
}

module.exports = {
  TslockError,
  LockBusyError,
  LockLostError,
  LockCanceledError,
  TslockConnectionError,
  TslockInvalidError,
  fromNative,
};
