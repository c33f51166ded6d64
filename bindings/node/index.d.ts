// index.d.ts - the tslock package's declarations (lib/index.js).

/** Options of ioredis' `tls`: PEM text (or a path) and the checks. */
export interface TlsOptions {
  ca?: string | Buffer | Array<string | Buffer>;
  cert?: string | Buffer;
  key?: string | Buffer;
  passphrase?: string;
  servername?: string;
  rejectUnauthorized?: boolean;
}

export type Scheme = 'auto' | 'timestamp' | 'token' | 'bridge';
export type Unit = 'ms' | 's' | 'float';

export interface LockOptions {
  /** The lease in milliseconds (the library's default: 30000). */
  ttl?: number;
  scheme?: Scheme;
  /** The unit of timestamp and bridge stamps. */
  unit?: Unit;
  /** A legacy library's stamp: a preset ("node-redis-lock") or a format. */
  dialect?: string;
  /** Also take a fencing number (one more round trip). */
  fencing?: boolean;
  /** Join the line of waiters and be served in order. */
  fair?: boolean;
  /** One side of a read-write lock. */
  rw?: 'shared' | 'exclusive';
  /** A counting semaphore of this many permits. */
  permits?: number;
}

export interface AcquireOptions extends LockOptions {
  /** How long to wait in ms: 0 tries once (the default), Infinity waits. */
  wait?: number;
  /** Aborting it ends the wait at once with nothing held. */
  signal?: AbortSignal;
}

export interface UsingOptions extends AcquireOptions {
  /** Renew while the routine runs: true (every ttl/3), an interval in ms,
   * or false. */
  renew?: boolean | number;
}

export interface WatchOptions {
  /** ms between renewals; 0 for a third of the ttl. */
  interval?: number;
  /** Called once if a renewal fails. */
  onLost?: (error: TslockError) => void;
}

export declare class Lock {
  readonly client: Client;
  readonly name: string;
  /** Whether this object holds the lock, as far as it knows. */
  readonly held: boolean;
  /** The fencing number of the hold (0 without `fencing`). */
  readonly fence: number;
  /** The value written for the hold: a token or a stamp. */
  readonly value: string;
  /** When the lease runs out, in Unix ms (0 when unknown). */
  readonly expires: number;
  readonly scheme: Scheme;
  release(): Promise<void>;
  extend(ttl?: number): Promise<void>;
  watch(options?: WatchOptions): Promise<void>;
  holders(): Promise<number>;
}

export declare class Client {
  static fromUrl(url: string, options?: { tls?: TlsOptions }): Client;
  acquire(name: string, options?: AcquireOptions): Promise<Lock>;
  using<T>(name: string, options: UsingOptions, routine: (signal: AbortSignal) => Promise<T>): Promise<T>;
  using<T>(name: string, routine: (signal: AbortSignal) => Promise<T>): Promise<T>;
  close(): void;
}

export declare class TslockError extends Error {
  /** The library's code: a negative TSLOCK_E* number. */
  readonly code: number;
  /** tslock_errname(): "TSLOCK_EBUSY", ... */
  readonly errname: string;
  readonly detail: string;
}
export declare class LockBusyError extends TslockError {}
export declare class LockLostError extends TslockError {}
export declare class LockCanceledError extends TslockError {}
export declare class TslockConnectionError extends TslockError {}
export declare class TslockInvalidError extends TslockError {}

export declare const version: string;
export declare function dialects(): Array<{ name: string; format: string; library: string }>;
