<?php
// SPDX-License-Identifier: BSD-3-Clause
//
// BridgeTest.php - tslock in bridge mode beside the PHP timestamp locks a
// fleet still runs, on one key: the Redis docs' SETNX pattern (phpredis),
// PredisLock and ninja-mutex (predis), with tslock writing each one's
// dialect.  On Redis 7 and through the proxy as 2.0, 2.2 and 2.6.0: 0
// overlaps under contention, each side waits for the other's live lease,
// and a legacy takeover of a lease tslock let run out is reported to
// tslock as a loss (release() false, refresh() LockLostException).

declare(strict_types=1);

namespace Tslock\Tests;

final class BridgeTest extends TestCase
{
    /** kind of worker => [dialect preset, peer factory]. */
    public static function peers(): array
    {
        return [
            'redis-docs' => ['redis-docs', fn (string $s, string $k, int $t,
                int $skew = 0) => new RedisDocsLock(self::redis($s), $k, $t,
                                                    $skew)],
            'predislock' => ['predislock', fn (string $s, string $k, int $t,
                int $skew = 0) => new PredisLockPeer(self::predis($s), $k, $t,
                                                     $skew)],
            'ninja' => ['ninja-mutex', fn (string $s, string $k, int $t,
                int $skew = 0) => new NinjaMutexPeer(self::predis($s), $k, $t,
                                                     $skew)],
        ];
    }

    public static function cases(): array
    {
        $out = [];
        foreach (array_keys(self::peers()) as $peer) {
            foreach (array_keys(self::servers()) as $server) {
                $out["$peer on $server"] = [$peer, $server];
            }
        }
        return $out;
    }

    /** @dataProvider cases */
    public function testEachWaitsForTheOther(string $peer, string $server): void
    {
        [$dialect, $make] = self::peers()[$peer];
        $socket = self::servers()[$server];
        $key = self::key('bridge');
        $lock = self::client($socket)->lock($key, 5.0,
            ['scheme' => 'bridge', 'dialect' => $dialect]);
        $legacy = $make($socket, $key, 5);

        $this->assertTrue($lock->acquire());
        $this->assertSame('bridge', $lock->getScheme());
        $this->assertFalse($legacy->tryAcquire(), 'legacy took a live lease');
        $this->assertTrue($lock->release());

        $this->assertTrue($legacy->tryAcquire());
        $this->assertFalse($lock->acquire(), 'tslock took a live legacy lease');
        $legacy->release();
        $this->assertTrue($lock->acquire());
        $lock->release();
    }

    /** @dataProvider cases */
    public function testLegacyTakeoverIsALoss(string $peer, string $server): void
    {
        [$dialect, $make] = self::peers()[$peer];
        $socket = self::servers()[$server];
        $key = self::key('takeover');
        $lock = self::client($socket)->lock($key, 5.0,
            ['scheme' => 'bridge', 'dialect' => $dialect]);
        $this->assertTrue($lock->acquire());
        // A peer whose clock is 60 s ahead sees tslock's lease as run out,
        // as a peer sees a holder paused past its lease.
        $legacy = $make($socket, $key, 5, 60);
        $this->assertTrue($legacy->tryAcquire(), 'no takeover');
        $this->assertFalse($lock->isAcquired());
        try {
            $lock->refresh();
            $this->fail('refresh after a takeover');
        } catch (\Tslock\Exception\LockLostException $e) {
            $this->assertSame(\Tslock\ELOST, $e->getCode());
            $this->assertSame('TSLOCK_ELOST', $e->getErrorName());
        }
        $this->assertFalse($lock->release());
        $this->assertNotFalse(self::redis()->get($key),
                              'tslock deleted the peer\'s lock');
    }

    public static function contentionCases(): array
    {
        $out = [];
        foreach (self::peers() as $peer => [$dialect]) {
            $out[$peer] = [$peer, $dialect];
        }
        return $out;
    }

    /** @dataProvider contentionCases */
    public function testContentionHasNoOverlap(string $peer, string $dialect): void
    {
        $runs = [];
        foreach (self::servers() as $server => $socket) {
            $runs[$server] = [[$peer, $peer, "bridge:$dialect",
                               "bridge:$dialect"], self::key('contend'),
                              $socket];
        }
        foreach (self::contendMany($runs, 0.5) as $server => $r) {
            $this->assertSame([], $r['errors'], $server);
            $this->assertSame(0, $r['overlaps'], "$server: " . json_encode($r));
            $this->assertSame(0, $r['lost'], "$server: " . json_encode($r));
            foreach ($r['sections'] as $who => $n) {
                $this->assertGreaterThan(0, $n, "$server: $who never got in");
            }
        }
    }

    /** The control: a peer that ignores the lock is caught overlapping. */
    public function testTheCounterSeesAPeerThatIgnoresTheLock(): void
    {
        $r = self::contend(['reckless', 'bridge:redis-docs'],
                           self::key('control'), 0.4);
        $this->assertSame([], $r['errors']);
        $this->assertGreaterThan(0, $r['overlaps'], json_encode($r));
    }
}
