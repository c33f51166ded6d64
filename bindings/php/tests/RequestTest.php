<?php
// SPDX-License-Identifier: BSD-3-Clause
//
// RequestTest.php - PHP's request life: several requests in one process
// (php-cgi -T N, which runs a script N times with a full request start
// and end each time, as an FPM worker does) share one persistent
// connection and no lock; a lock left held is released at request end,
// even after a fatal error; a wait obeys max_execution_time and ends on a
// pcntl signal whose handler throws, holding nothing.

declare(strict_types=1);

namespace Tslock\Tests;

use Tslock\Exception\LockTimeoutException;

final class RequestTest extends TestCase
{
    private static function cgi(string $code, int $requests,
                                array $ini = []): array
    {
        if (!is_executable('/usr/bin/php-cgi')) {
            self::markTestSkipped('no php-cgi (apt-get install php-cgi)');
        }
        $file = tempnam(sys_get_temp_dir(), 'tslock-cgi');
        file_put_contents($file, "<?php\n" . $code);
        try {
            return self::runCmd(array_merge(
                self::php($ini, '/usr/bin/php-cgi'),
                ['-q', '-T', (string)$requests, $file]));
        } finally {
            unlink($file);
        }
    }

    private static function connectionsReceived(): int
    {
        return (int)self::redis()->info('stats')['total_connections_received'];
    }

    public function testRequestsShareAConnectionAndNoLock(): void
    {
        $key = self::key('fpm');
        $url = var_export(self::url(), true);
        $before = self::connectionsReceived();
        [$rc, $out, $err] = self::cgi(<<<PHP
            \$c = Tslock\\Client::fromUrl($url, ['persistent' => true]);
            \$lock = \$c->lock('$key', 30.0);
            \$got = \$lock->acquire();
            \$GLOBALS['kept'] = \$lock; // still held when the request ends
            echo json_encode(['got' => \$got]
                             + Tslock\\Client::poolStats()), "\\n";
            PHP, 4);
        $after = self::connectionsReceived();
        $this->assertSame(0, $rc, $err);
        $lines = array_map(fn ($l) => json_decode($l, true),
                           explode("\n", trim($out)));
        $this->assertCount(4, $lines, $out);
        foreach ($lines as $i => $line) {
            $this->assertTrue($line['got'],
                "request $i found the last one's lock still held");
            $this->assertSame(1, $line['connections']);
            $this->assertSame($i, $line['reused']);
        }
        // One connection for four requests (one for our own INFO).
        $this->assertSame(2, $after - $before);
        $this->assertSame(0, self::redis()->exists($key));
    }

    public function testALockHeldAtAFatalErrorIsReleased(): void
    {
        $key = self::key('fatal');
        $busy = self::key('busy');
        $holder = self::client()->lock($busy, 30.0);
        $this->assertTrue($holder->acquire());
        $url = var_export(self::url(), true);
        $t = microtime(true);
        [$rc, $out, $err] = self::cgi(<<<PHP
            \$c = Tslock\\Client::fromUrl($url, ['persistent' => true]);
            \$mine = \$c->lock('$key', 30.0);
            echo \$mine->acquire() ? "took\\n" : "busy\\n";
            \$c->lock('$busy')->acquire(true); // ends at the time limit
            echo "not reached\\n";
            PHP, 2, ['max_execution_time' => 1]);
        $seconds = microtime(true) - $t;
        $this->assertStringNotContainsString('not reached', $out);
        $this->assertSame(2, substr_count($out, 'took'), $out . $err);
        $this->assertSame(2, substr_count($out . $err,
            'Maximum execution time of 1 second exceeded'), $out . $err);
        $this->assertGreaterThan(1.8, $seconds);
        $this->assertLessThan(6.0, $seconds); // two requests of 1 s, loaded
        $this->assertSame(0, self::redis()->exists($key));
        $this->assertTrue($holder->isAcquired(), 'the waiter took the lock');
        $holder->release();
    }

    public function testAutoReleaseFalseHandsAHoldToAnotherProcess(): void
    {
        $key = self::key('handoff');
        $url = var_export(self::url(), true);
        [$rc, $out, $err] = self::runCode(<<<PHP
            \$lock = Tslock\\Client::fromUrl($url)
                ->lock('$key', 30.0, ['autoRelease' => false]);
            \$lock->acquire() or exit(1);
            echo \$lock->owner();
            PHP);
        $this->assertSame(0, $rc, $err);
        $this->assertSame(1, self::redis()->exists($key),
                          'the hold ended with its request');
        $lock = self::client()->restoreLock($key, $out);
        $this->assertTrue($lock->isAcquired());
        $this->assertTrue($lock->release());
    }

    public function testSetTimeLimitBoundsAWaitInTheCli(): void
    {
        $busy = self::key('busy');
        $holder = self::client()->lock($busy, 30.0);
        $this->assertTrue($holder->acquire());
        $url = var_export(self::url(), true);
        [$rc, $out, $err, $seconds] = self::runCode(<<<PHP
            set_time_limit(1);
            Tslock\\Client::fromUrl($url)->lock('$busy')->block(10);
            PHP);
        $this->assertNotSame(0, $rc);
        $this->assertStringContainsString('Maximum execution time of 1 second',
                                          $out . $err);
        $this->assertLessThan(5.0, $seconds);
        $this->assertTrue($holder->isAcquired());
        $holder->release();
    }

    public function testASignalHandlerThatThrowsEndsTheWait(): void
    {
        $key = self::key('signal');
        $holder = self::client()->lock($key, 30.0);
        $this->assertTrue($holder->acquire());
        $waiter = self::client()->lock($key, 30.0);
        pcntl_async_signals(true);
        pcntl_signal(SIGALRM, function () {
            throw new \RuntimeException('alarm');
        });
        $t = microtime(true);
        pcntl_alarm(1);
        try {
            $waiter->acquire(true);
            $this->fail('the wait outlived the signal');
        } catch (\RuntimeException $e) {
            $this->assertSame('alarm', $e->getMessage());
        } finally {
            pcntl_alarm(0);
            pcntl_signal(SIGALRM, SIG_DFL);
        }
        $this->assertGreaterThan(0.9, microtime(true) - $t);
        $this->assertLessThan(3.0, microtime(true) - $t);
        $this->assertFalse($waiter->isAcquired());
        $this->assertTrue($holder->isAcquired());
        $holder->release();
    }

    public function testAWaitGoesOnAfterAHandlerThatReturns(): void
    {
        $key = self::key('signal');
        $holder = self::client()->lock($key, 30.0);
        $this->assertTrue($holder->acquire());
        $waiter = self::client()->lock($key, 30.0);
        $seen = 0;
        pcntl_async_signals(true);
        pcntl_signal(SIGALRM, function () use (&$seen) {
            $seen++;
        });
        $t = microtime(true);
        pcntl_alarm(1);
        try {
            $waiter->block(1.6);
            $this->fail('block() took a held lock');
        } catch (LockTimeoutException $e) {
            $this->assertSame(1, $seen);
            $this->assertGreaterThan(1.5, microtime(true) - $t);
        } finally {
            pcntl_alarm(0);
            pcntl_signal(SIGALRM, SIG_DFL);
        }
        $holder->release();
    }
}
