<?php
// SPDX-License-Identifier: BSD-3-Clause
//
// LegacyPeers.php - the PHP timestamp locks that still run, written here
// from their documented behaviour (never copied): the SETNX page of the
// Redis documentation over phpredis, PredisLock (built on that page,
// value "<seconds + timeout + 1>:<pid>") and ninja-mutex (a PHP-serialized
// array with pid, hostname and expires = time() + expiration) over predis.
// Each takes the lock with SETNX; finding it held, it reads the value and,
// when the expiry in it has passed by its own clock, takes it over with
// GETSET, winning only when the value GETSET returns is still expired.
// Each releases with DEL while its own lease has not run out.  $skew moves
// a peer's clock (seconds), to play a peer that sees a paused holder's
// lease as run out.

declare(strict_types=1);

namespace Tslock\Tests;

abstract class LegacyPeer
{
    protected ?string $mine = null;
    protected int $expires = 0;

    public function __construct(protected string $key, protected int $timeout,
                                protected int $skew = 0)
    {
    }

    protected function now(): int
    {
        return time() + $this->skew;
    }

    /** The value this peer writes, and the second its lease ends. */
    abstract protected function value(): array;

    /** The expiry a stored value says, or null when it is not ours to read. */
    abstract protected function expiryOf(string $value): ?int;

    abstract protected function setnx(string $value): bool;

    abstract protected function get(): ?string;

    abstract protected function getset(string $value): ?string;

    abstract protected function del(): void;

    public function tryAcquire(): bool
    {
        [$value, $expires] = $this->value();
        if ($this->setnx($value)) {
            $this->mine = $value;
            $this->expires = $expires;
            return true;
        }
        $current = $this->get();
        if ($current === null) {
            return false; // released meanwhile: the next try's SETNX
        }
        $at = $this->expiryOf($current);
        if ($at === null || $at >= $this->now()) {
            return false;
        }
        $old = $this->getset($value);
        $oldAt = $old === null ? null : $this->expiryOf($old);
        if ($old === null || ($oldAt !== null && $oldAt < $this->now())) {
            $this->mine = $value;
            $this->expires = $expires;
            return true;
        }
        return false; // another client took it first; our stamp is close
    }

    public function acquire(float $seconds): bool
    {
        $until = microtime(true) + $seconds;
        do {
            if ($this->tryAcquire()) {
                return true;
            }
            usleep(1000);
        } while (microtime(true) < $until);
        return false;
    }

    public function release(): void
    {
        if ($this->mine !== null && $this->now() < $this->expires) {
            $this->del();
        }
        $this->mine = null;
    }
}

/** The SETNX page's pattern: "<unix seconds + timeout + 1>", phpredis. */
final class RedisDocsLock extends LegacyPeer
{
    public function __construct(private \Redis $r, string $key, int $timeout,
                                int $skew = 0)
    {
        parent::__construct($key, $timeout, $skew);
    }

    protected function value(): array
    {
        $stamp = $this->now() + $this->timeout + 1;
        return [(string)$stamp, $stamp];
    }

    protected function expiryOf(string $value): ?int
    {
        return ctype_digit($value) ? (int)$value : null;
    }

    protected function setnx(string $value): bool
    {
        return (bool)$this->r->setnx($this->key, $value);
    }

    protected function get(): ?string
    {
        $v = $this->r->get($this->key);
        return $v === false ? null : $v;
    }

    protected function getset(string $value): ?string
    {
        $v = $this->r->getSet($this->key, $value);
        return $v === false ? null : $v;
    }

    protected function del(): void
    {
        $this->r->del($this->key);
    }
}

/** Over predis; the value in the subclass's shape. */
abstract class PredisPeer extends LegacyPeer
{
    public function __construct(protected \Predis\Client $p, string $key,
                                int $timeout, int $skew = 0)
    {
        parent::__construct($key, $timeout, $skew);
    }

    protected function setnx(string $value): bool
    {
        return (bool)$this->p->setnx($this->key, $value);
    }

    protected function get(): ?string
    {
        return $this->p->get($this->key);
    }

    protected function getset(string $value): ?string
    {
        return $this->p->getset($this->key, $value);
    }

    protected function del(): void
    {
        $this->p->del([$this->key]);
    }
}

/** PredisLock: "<unix seconds + timeout + 1>:<pid>". */
final class PredisLockPeer extends PredisPeer
{
    protected function value(): array
    {
        $stamp = $this->now() + $this->timeout + 1;
        return [$stamp . ':' . getmypid(), $stamp];
    }

    protected function expiryOf(string $value): ?int
    {
        $parts = explode(':', $value, 2);
        return count($parts) === 2 && ctype_digit($parts[0])
            ? (int)$parts[0] : null;
    }
}

/** ninja-mutex with an expiration: a:3:{pid, hostname, expires}. */
final class NinjaMutexPeer extends PredisPeer
{
    protected function value(): array
    {
        $expires = $this->now() + $this->timeout;
        return [serialize(['pid' => getmypid(), 'hostname' => gethostname(),
                           'expires' => $expires]), $expires];
    }

    protected function expiryOf(string $value): ?int
    {
        $info = @unserialize($value, ['allowed_classes' => false]);
        return is_array($info) && isset($info['expires'])
            && is_int($info['expires']) ? $info['expires'] : null;
    }
}
