<?php
// SPDX-License-Identifier: BSD-3-Clause
//
// contend.php KIND LOCK_SOCKET CHECK_SOCKET KEY START SECONDS - one
// process taking KEY over and over from START for SECONDS (and until it
// has had three sections), as KIND:
// bridge:DIALECT or token (tslock), redis-docs, predislock or ninja (the
// legacy peers of LegacyPeers.php), symfony (Symfony Lock's RedisStore)
// or reckless (takes nothing: the control that overlaps are seen).
// Inside each section it counts, on CHECK_SOCKET (the real server), how
// many are inside at once.  Prints {"sections", "overlaps", "lost",
// "error"} as JSON.

declare(strict_types=1);

namespace Tslock\Tests;

require_once 'Predis/Autoloader.php';
\Predis\Autoloader::register();
require_once 'Symfony/Component/Lock/autoload.php';
require_once __DIR__ . '/../LegacyPeers.php';

[, $kind, $lockSocket, $checkSocket, $key, $start, $seconds] = $argv;
$check = new \Redis();
$check->connect($checkSocket);
$report = ['sections' => 0, 'overlaps' => 0, 'lost' => 0, 'error' => null];
$timeout = 5;

try {
    if (str_starts_with($kind, 'bridge:') || $kind === 'token') {
        $client = \Tslock\Client::fromUrl('unix://' . $lockSocket);
        $options = $kind === 'token'
            ? ['scheme' => 'token']
            : ['scheme' => 'bridge', 'dialect' => substr($kind, 7)];
        $lock = $client->lock($key, (float)$timeout,
                              $options + ['retry' => [2, 10]]);
        $take = function () use ($lock): bool {
            try {
                return $lock->acquire();
            } catch (\Tslock\Exception\LockException $e) {
                // Symfony's RedisStore holds the key as a sorted set.
                if ($e->getCode() === \Tslock\EWRONGTYPE) {
                    return false;
                }
                throw $e;
            }
        };
        $drop = fn (): bool => $lock->release();
    } elseif ($kind === 'reckless') {
        // The control: takes nothing, so it overlaps whoever is inside.
        $take = fn (): bool => true;
        $drop = fn (): bool => true;
    } elseif ($kind === 'symfony') {
        $redis = new \Redis();
        $redis->connect($lockSocket);
        $factory = new \Symfony\Component\Lock\LockFactory(
            new \Symfony\Component\Lock\Store\RedisStore($redis));
        $lock = $factory->createLock($key, (float)$timeout, false);
        $take = fn (): bool => $lock->acquire(false);
        $drop = function () use ($lock): bool {
            $lock->release();
            return true;
        };
    } else {
        $peer = match ($kind) {
            'redis-docs' => new RedisDocsLock(
                (function () use ($lockSocket) {
                    $r = new \Redis();
                    $r->connect($lockSocket);
                    return $r;
                })(), $key, $timeout),
            'predislock' => new PredisLockPeer(new \Predis\Client(
                ['scheme' => 'unix', 'path' => $lockSocket]), $key, $timeout),
            'ninja' => new NinjaMutexPeer(new \Predis\Client(
                ['scheme' => 'unix', 'path' => $lockSocket]), $key, $timeout),
        };
        $take = fn (): bool => $peer->tryAcquire();
        $drop = function () use ($peer): bool {
            $peer->release();
            return true;
        };
    }
    while (microtime(true) < (float)$start) {
        usleep(1000);
    }
    // SECONDS from START, and on past them until this worker has had
    // three sections (a worker started late on a loaded machine still
    // contends), but never past 20 s.
    $end = (float)$start + (float)$seconds;
    $limit = microtime(true) + 20;
    while ((microtime(true) < $end || $report['sections'] < 3)
           && microtime(true) < $limit) {
        if (!$take()) {
            usleep(random_int(500, 2000));
            continue;
        }
        if ($check->incr("$key:inside") !== 1) {
            $report['overlaps']++;
        }
        usleep(300);
        $check->decr("$key:inside");
        if (!$drop()) {
            $report['lost']++;
        }
        $report['sections']++;
        usleep(random_int(0, 1000));
    }
} catch (\Throwable $e) {
    $report['error'] = get_class($e) . ': ' . $e->getMessage();
}
echo json_encode($report), "\n";
