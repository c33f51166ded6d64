<?php
// SPDX-License-Identifier: BSD-3-Clause
//
// MigrationTest.php - one test per row of doc/php.md's migration table:
// the legacy library's calls (from its documented behaviour) and the
// tslock calls the row maps them to, on one key, with each side refusing
// the other's live lock and the mapped calls doing what the row says.
// DocTest checks that every row names one of these tests.

declare(strict_types=1);

namespace Tslock\Tests;

use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\RedisStore;

final class MigrationTest extends TestCase
{
    /** Legacy and tslock on one key refuse each other's live lock. */
    private function bothWays(LegacyPeer $legacy, \Tslock\Lock $lock): void
    {
        $this->assertTrue($legacy->tryAcquire());
        $this->assertFalse($lock->acquire());
        $legacy->release();
        $this->assertTrue($lock->acquire());
        $this->assertFalse($legacy->tryAcquire());
        $this->assertTrue($lock->release());
        $this->assertTrue($legacy->tryAcquire());
        $legacy->release();
    }

    public function testRedisDocsPattern(): void
    {
        $key = self::key('docs');
        // SETNX key <now + timeout + 1>, GET/GETSET takeover, DEL.
        $legacy = new RedisDocsLock(self::redis(), $key, 10);
        $lock = self::client()->lock($key, 10.0,
            ['scheme' => 'bridge', 'dialect' => 'redis-docs']);
        $this->bothWays($legacy, $lock);
    }

    public function testPredisLock(): void
    {
        $key = self::key('predislock');
        // PredisLock: the same pattern, "<now + timeout + 1>:<pid>".
        $legacy = new PredisLockPeer(self::predis(), $key, 10);
        $lock = self::client()->lock($key, 10.0,
            ['scheme' => 'bridge', 'dialect' => 'predislock']);
        $this->bothWays($legacy, $lock);
        // acquire($timeout) waiting: block($seconds) waits the same way.
        $this->assertTrue($legacy->tryAcquire());
        $this->expectException(\Tslock\Exception\LockTimeoutException::class);
        $lock->block(0.2);
    }

    public function testNinjaMutex(): void
    {
        $key = self::key('ninja');
        // ninja-mutex: acquireLock($ms) / releaseLock(), serialized array.
        $legacy = new NinjaMutexPeer(self::predis(), $key, 10);
        $lock = self::client()->lock($key, 10.0,
            ['scheme' => 'bridge', 'dialect' => 'ninja-mutex']);
        $this->bothWays($legacy, $lock);
        // acquireLock(1000) is block(1.0); releaseLock() is release().
        $this->assertTrue($lock->block(1.0));
        $this->assertTrue($lock->release());
    }

    public function testSymfonyLock(): void
    {
        $key = self::key('symfony');
        $factory = new LockFactory(new RedisStore(self::redis()));
        $theirs = $factory->createLock($key, 10.0);
        $ours = self::client()->lock($key, 10.0, ['scheme' => 'token']);
        // createLock($key, $ttl) -> lock($key, $ttl); the same calls.
        $this->assertTrue($theirs->acquire());
        try {
            $ours->acquire();
            $this->fail('tslock took a key Symfony holds');
        } catch (\Tslock\Exception\LockException $e) {
            // RedisStore's key is a sorted set: never taken, never a string.
            $this->assertSame(\Tslock\EWRONGTYPE, $e->getCode());
        }
        $theirs->release();
        $this->assertTrue($ours->acquire());
        $this->assertFalse($factory->createLock($key, 10.0)->acquire());
        $ours->refresh(20.0);
        $this->assertTrue($ours->isAcquired());
        $this->assertFalse($ours->isExpired());
        $this->assertEqualsWithDelta(20.0, $ours->getRemainingLifetime(), 0.5);
        $ours->release();
        $this->assertFalse($ours->isAcquired());
    }

    public function testLaravelLock(): void
    {
        $key = self::key('laravel');
        $c = self::client();
        // Cache::lock($key, $seconds) -> $client->lock($key, $seconds)
        $lock = $c->lock($key, 10.0);
        $this->assertSame('ran', $lock->get(fn () => 'ran'));
        $this->assertTrue($lock->get());
        // Cache::restoreLock($key, $owner) -> $client->restoreLock(...)
        $restored = self::client()->restoreLock($key, $lock->owner());
        $this->assertFalse($c->lock($key, 10.0)->get());
        // forceRelease(): whoever holds it.
        $c->lock($key)->forceRelease();
        $this->assertFalse($restored->release());
        $this->assertSame('waited', $c->lock($key, 10.0)
            ->betweenBlockedAttemptsSleepFor(10)->block(1, fn () => 'waited'));
    }
}
