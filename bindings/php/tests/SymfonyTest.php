<?php
// SPDX-License-Identifier: BSD-3-Clause
//
// SymfonyTest.php - tslock's token mode beside Symfony Lock's RedisStore
// (Debian's php-symfony-lock) on one key.  RedisStore keeps a key as a
// sorted set of tokens; tslock finds it with TSLOCK_EWRONGTYPE and never
// takes it, and RedisStore finds tslock's string and refuses it: 0
// overlaps under contention.

declare(strict_types=1);

namespace Tslock\Tests;

use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\RedisStore;

final class SymfonyTest extends TestCase
{
    private static function symfony(string $key): \Symfony\Component\Lock\LockInterface
    {
        return (new LockFactory(new RedisStore(self::redis())))
            ->createLock($key, 5.0, false);
    }

    public function testEachRefusesTheOther(): void
    {
        $key = self::key('symfony');
        $lock = self::client()->lock($key, 5.0, ['scheme' => 'token']);
        $theirs = self::symfony($key);

        $this->assertTrue($lock->acquire());
        $this->assertFalse($theirs->acquire(false));
        $this->assertTrue($lock->release());

        $this->assertTrue($theirs->acquire(false));
        try {
            $lock->acquire();
            $this->fail('tslock took a key Symfony holds');
        } catch (\Tslock\Exception\LockException $e) {
            $this->assertSame(\Tslock\EWRONGTYPE, $e->getCode());
        }
        $this->assertFalse($lock->isAcquired());
        $theirs->release();
        $this->assertTrue($lock->acquire());
        $lock->release();
    }

    public function testContentionHasNoOverlap(): void
    {
        $r = self::contend(['symfony', 'symfony', 'token', 'token'],
                           self::key('symfony-contend'), 0.6);
        $this->assertSame([], $r['errors']);
        $this->assertSame(0, $r['overlaps'], json_encode($r));
        foreach ($r['sections'] as $who => $n) {
            $this->assertGreaterThan(0, $n, "$who never got in");
        }
    }
}
