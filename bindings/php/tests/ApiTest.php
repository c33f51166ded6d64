<?php
// SPDX-License-Identifier: BSD-3-Clause
//
// ApiTest.php - Tslock\Client and Tslock\Lock against a real server:
// Symfony's LockInterface shape, Laravel's Lock shape, the library's
// options (schemes, units, dialects, fencing, read-write, semaphores),
// the exceptions and their codes, persistent connections.

declare(strict_types=1);

namespace Tslock\Tests;

use Tslock\Exception\ConnectionException;
use Tslock\Exception\InvalidArgumentException;
use Tslock\Exception\LockException;
use Tslock\Exception\LockLostException;
use Tslock\Exception\LockTimeoutException;

final class ApiTest extends TestCase
{
    public function testSymfonyShape(): void
    {
        $key = self::key();
        $c = self::client();
        $lock = $c->lock($key, 10.0);
        $other = $c->lock($key);
        $this->assertNull($lock->getRemainingLifetime());
        $this->assertFalse($lock->isExpired());
        $this->assertFalse($lock->isAcquired());

        $this->assertTrue($lock->acquire());
        $this->assertTrue($lock->isAcquired());
        $this->assertFalse($lock->isExpired());
        $this->assertEqualsWithDelta(10.0, $lock->getRemainingLifetime(), 0.5);
        $this->assertFalse($other->acquire());
        $this->assertTrue($lock->acquire(), 'acquire() when held renews');

        $lock->refresh(2.0);
        $this->assertEqualsWithDelta(2.0, $lock->getRemainingLifetime(), 0.3);
        $lock->refresh();
        $this->assertEqualsWithDelta(10.0, $lock->getRemainingLifetime(), 0.5);
        $this->assertTrue($lock->release());
        $this->assertFalse($lock->release(), 'nothing held');
        $this->assertSame(0, self::redis()->exists($key));
        $this->assertTrue($other->acquire());
        $other->release();
    }

    public function testALeaseThatRanOutIsExpiredAndLost(): void
    {
        $lock = self::client()->lock(self::key(), 0.15);
        $this->assertTrue($lock->acquire());
        usleep(250000);
        $this->assertTrue($lock->isExpired());
        $this->assertFalse($lock->isAcquired());
        $this->assertSame(0.0, $lock->getRemainingLifetime());
        $this->expectException(LockLostException::class);
        $lock->refresh();
    }

    public function testBlockingAcquireWaitsForTheHolder(): void
    {
        $key = self::key();
        $holder = self::client()->lock($key, 0.3);
        $this->assertTrue($holder->acquire());
        $waiter = self::client()->lock($key, 5.0);
        $t = microtime(true);
        $this->assertTrue($waiter->acquire(true));
        $this->assertGreaterThan(0.2, microtime(true) - $t);
        $this->assertFalse($holder->release(), 'the holder lost it');
        $this->assertTrue($waiter->release());
    }

    public function testLaravelShape(): void
    {
        $key = self::key();
        $c = self::client();
        $lock = $c->lock($key, 10.0);
        $this->assertSame(42, $lock->get(fn () => 42));
        $this->assertSame(0, self::redis()->exists($key), 'get() released');

        $this->assertTrue($lock->get());
        $other = $c->lock($key, 10.0)->betweenBlockedAttemptsSleepFor(20);
        $called = false;
        $this->assertFalse($other->get(function () use (&$called) {
            $called = true;
        }));
        $this->assertFalse($called);
        $t = microtime(true);
        try {
            $other->block(0.2);
            $this->fail('block() took a held lock');
        } catch (LockTimeoutException $e) {
            $this->assertSame(\Tslock\EBUSY, $e->getCode());
            $this->assertGreaterThanOrEqual(0.19, microtime(true) - $t);
        }

        // owner() hands the hold to another process's object.
        $owner = $lock->owner();
        $this->assertIsString($owner);
        $restored = self::client()->restoreLock($key, $owner);
        $this->assertTrue($restored->isAcquired());
        $this->assertTrue($restored->release());
        $this->assertFalse($lock->release(), 'already released by its heir');

        $this->assertSame('done', $other->block(1, fn () => 'done'));
        $this->assertSame(0, self::redis()->exists($key));

        try {
            $other->get(function () {
                throw new \DomainException('inside');
            });
            $this->fail('the callback\'s exception was lost');
        } catch (\DomainException $e) {
            $this->assertSame(0, self::redis()->exists($key),
                              'released after the callback threw');
        }
    }

    public function testForceReleaseDeletesWhateverHoldsTheKey(): void
    {
        $key = self::key();
        $r = self::redis();
        $lock = self::client()->lock($key);
        $lock->forceRelease(); // nothing there: nothing to do
        $r->set($key, 'someone else');
        $lock->forceRelease();
        $this->assertSame(0, $r->exists($key));
        $holder = self::client()->lock($key, 10.0, ['scheme' => 'bridge']);
        $this->assertTrue($holder->acquire());
        $lock->forceRelease();
        $this->assertSame(0, $r->exists($key));
        $this->assertFalse($holder->release(), 'the holder learns it lost');
    }

    public function testReentrant(): void
    {
        $key = self::key();
        $lock = self::client()->lock($key, 10.0, ['reentrant' => true]);
        $this->assertTrue($lock->acquire());
        $this->assertTrue($lock->acquire());
        $this->assertTrue($lock->release(), 'one hold dropped');
        $this->assertSame(1, self::redis()->exists($key));
        $this->assertTrue($lock->release());
        $this->assertSame(0, self::redis()->exists($key));
    }

    public function testDestructorAndAutoRelease(): void
    {
        $key = self::key();
        $lock = self::client()->lock($key);
        $this->assertTrue($lock->acquire());
        unset($lock);
        $this->assertSame(0, self::redis()->exists($key));

        $lock = self::client()->lock($key, 10.0, ['autoRelease' => false]);
        $this->assertTrue($lock->acquire());
        unset($lock);
        $this->assertSame(1, self::redis()->exists($key));
    }

    public static function schemes(): array
    {
        $out = [];
        foreach (['timestamp', 'bridge'] as $scheme) {
            foreach (['ms', 's', 'float'] as $unit) {
                $out["$scheme $unit"] = [$scheme, $unit];
            }
        }
        $out['token'] = ['token', null];
        return $out;
    }

    /** @dataProvider schemes */
    public function testSchemesAndUnits(string $scheme, ?string $unit): void
    {
        $key = self::key();
        $options = ['scheme' => $scheme] + ($unit ? ['unit' => $unit] : []);
        $lock = self::client()->lock($key, 10.0, $options);
        $this->assertTrue($lock->acquire());
        $this->assertSame($scheme, $lock->getScheme());
        $value = self::redis()->get($key);
        $this->assertSame($value, $lock->getValue());
        $now = microtime(true);
        switch ($unit) {
            case 'ms':
                $this->assertEqualsWithDelta(($now + 10) * 1000 + 1,
                                             (float)$value, 1500);
                break;
            case 's':
                $this->assertEqualsWithDelta(time() + 11, (int)$value, 1);
                break;
            case 'float':
                $this->assertMatchesRegularExpression('/^\d+\.\d+$/', $value);
                $this->assertEqualsWithDelta($now + 10, (float)$value, 1.5);
                break;
            default:
                $this->assertMatchesRegularExpression('/^[0-9a-f]{32}$/',
                                                      $value);
        }
        $this->assertTrue($lock->release());
    }

    public function testDialects(): void
    {
        $key = self::key();
        $lock = self::client()->lock($key, 10.0,
            ['scheme' => 'bridge', 'dialect' => 'ninja-mutex']);
        $this->assertSame('ninja-mutex', $lock->getDialect());
        $this->assertTrue($lock->acquire());
        $info = unserialize(self::redis()->get($key));
        $this->assertSame(['pid', 'hostname', 'expires'], array_keys($info));
        // Whole seconds, never shorter than the lease asked for.
        $this->assertGreaterThanOrEqual(time() + 10, $info['expires']);
        $this->assertLessThanOrEqual(time() + 12, $info['expires']);
        $this->assertTrue($lock->release());

        $lock = self::client()->lock($key, 10.0,
            ['scheme' => 'timestamp', 'dialect' => '{s+1}:{pid}']);
        $this->assertTrue($lock->acquire());
        [$stamp, $pid] = explode(':', self::redis()->get($key));
        $this->assertSame((string)getmypid(), $pid);
        // Whole seconds, "+1", never shorter than the lease asked for.
        $this->assertGreaterThanOrEqual(time() + 11, (int)$stamp);
        $this->assertLessThanOrEqual(time() + 13, (int)$stamp);
        $lock->release();
        try {
            self::client()->lock($key, 1.0, ['dialect' => 'predis-lock']);
            $this->fail('a bad dialect was taken');
        } catch (InvalidArgumentException $e) {
            $this->assertSame(\Tslock\EINVAL, $e->getCode());
            $this->assertStringContainsString('dialect', $e->getMessage());
        }
    }

    public function testFencing(): void
    {
        $lock = self::client()->lock(self::key(), 5.0, ['fencing' => true]);
        $this->assertSame(0, $lock->getFence());
        $this->assertTrue($lock->acquire());
        $first = $lock->getFence();
        $this->assertGreaterThan(0, $first);
        $lock->release();
        $this->assertTrue($lock->acquire());
        $this->assertGreaterThan($first, $lock->getFence());
        $lock->release();
    }

    public function testReadWriteAndSemaphores(): void
    {
        $key = self::key();
        $c = self::client();
        $r1 = $c->lock($key, 5.0, ['rw' => 'shared']);
        $r2 = $c->lock($key, 5.0, ['rw' => 'shared']);
        $w = $c->lock($key, 5.0, ['rw' => 'exclusive']);
        $this->assertTrue($r1->acquire());
        $this->assertTrue($r2->acquire());
        $this->assertSame(2, $r1->holders());
        $this->assertFalse($w->acquire());
        $r1->release();
        $r2->release();
        $this->assertTrue($w->acquire());
        $w->release();

        $key = self::key('sem');
        $sem = [];
        for ($i = 0; $i < 3; $i++) {
            $sem[] = $c->lock($key, 5.0, ['permits' => 2]);
        }
        $this->assertTrue($sem[0]->acquire());
        $this->assertTrue($sem[1]->acquire());
        $this->assertFalse($sem[2]->acquire());
        $this->assertSame(2, $sem[2]->holders());
        $sem[0]->release();
        $this->assertTrue($sem[2]->acquire());
    }

    public function testExceptionsCarryTheLibrarysCode(): void
    {
        $this->assertSame(-1, \Tslock\EBUSY);
        $this->assertSame(-2, \Tslock\ELOST);
        $this->assertSame(0, \Tslock\OK);
        $this->assertTrue(is_subclass_of(LockTimeoutException::class,
                                         LockException::class));
        $this->assertTrue(is_subclass_of(LockException::class,
                                         \RuntimeException::class));
        try {
            \Tslock\Client::fromUrl('redis://host:notaport');
            $this->fail('a bad URL was taken');
        } catch (InvalidArgumentException $e) {
            $this->assertSame(\Tslock\EINVAL, $e->getCode());
            $this->assertSame('TSLOCK_EINVAL', $e->getErrorName());
        }
        try {
            \Tslock\Client::fromUrl('unix://' . sys_get_temp_dir()
                                    . '/no-such-redis.sock');
            $this->fail('connected to nothing');
        } catch (ConnectionException $e) {
            $this->assertSame(\Tslock\EIO, $e->getCode());
            $this->assertSame('TSLOCK_EIO', $e->getErrorName());
        }
        try {
            self::client()->lock(self::key(), 1.0, ['colour' => 'red']);
            $this->fail('an unknown option was taken');
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString('colour', $e->getMessage());
        }
    }

    public function testStreamOptionsAreTlsSettings(): void
    {
        try {
            \Tslock\Client::fromUrl(self::url(),
                                    ['stream' => ['verify_peer' => false]]);
            $this->fail('TLS options on a plain URL');
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString('rediss://', $e->getMessage());
        }
        try {
            \Tslock\Client::fromUrl('rediss://127.0.0.1:1',
                                    ['stream' => ['ciphers' => 'ALL']]);
            $this->fail('an unknown stream option was taken');
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString('cafile', $e->getMessage());
        }
        try {
            \Tslock\Client::fromUrl('rediss://127.0.0.1:1', ['stream' => [
                'cafile' => '/nonexistent/ca.pem', 'verify_peer' => true,
                'verify_peer_name' => false]]);
            $this->fail('a CA file that is not there was taken');
        } catch (LockException $e) {
            $this->assertSame(\Tslock\ETLS, $e->getCode(), $e->getMessage());
        }
    }

    public function testPersistentConnectionsAreShared(): void
    {
        $before = \Tslock\Client::poolStats();
        $a = self::client(null, ['persistent' => 'api-test']);
        $b = self::client(null, ['persistent' => 'api-test']);
        $this->assertTrue($a->isPersistent());
        $this->assertFalse(self::client()->isPersistent());
        $after = \Tslock\Client::poolStats();
        $this->assertSame($before['reused'] + 1, $after['reused']);
        $key = self::key();
        $la = $a->lock($key);
        $this->assertTrue($la->acquire());
        $this->assertFalse($b->lock($key)->acquire());
        $la->release();
    }
}
