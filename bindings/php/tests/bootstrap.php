<?php
// SPDX-License-Identifier: BSD-3-Clause
//
// bootstrap.php - what every test of the tslock extension shares: the
// servers tests/test_php.sh started (TSLOCK_PHP_SOCKET, and the proxies
// answering as old Redis versions in TSLOCK_PHP_OLD), phpredis and predis
// connections to look at keys and to drive the legacy peers, child PHP
// processes that load the same extension, and the overlap counter.

declare(strict_types=1);

namespace Tslock\Tests;

require_once 'Predis/Autoloader.php';
\Predis\Autoloader::register();
require_once 'Symfony/Component/Lock/autoload.php';
require_once __DIR__ . '/LegacyPeers.php';

if (!extension_loaded('tslock')) {
    fwrite(STDERR, "the tslock extension is not loaded (php -d extension=...)\n");
    exit(1);
}

abstract class TestCase extends \PHPUnit\Framework\TestCase
{
    public static function socket(): string
    {
        return (string)getenv('TSLOCK_PHP_SOCKET');
    }

    public static function url(): string
    {
        return 'unix://' . self::socket();
    }

    /** The old-version proxies: version => socket. */
    public static function oldSockets(): array
    {
        $out = [];
        foreach (preg_split('/\s+/', trim((string)getenv('TSLOCK_PHP_OLD')))
                 as $pair) {
            if ($pair !== '') {
                [$v, $path] = explode('=', $pair, 2);
                $out[$v] = $path;
            }
        }
        return $out;
    }

    /** 7.x itself and every proxy: name => socket. */
    public static function servers(): array
    {
        return ['server' => self::socket()] + self::oldSockets();
    }

    public static function redis(?string $socket = null): \Redis
    {
        $r = new \Redis();
        $r->connect($socket ?? self::socket());
        return $r;
    }

    public static function predis(?string $socket = null): \Predis\Client
    {
        return new \Predis\Client(['scheme' => 'unix',
                                   'path' => $socket ?? self::socket()]);
    }

    public static function key(string $what = 'k'): string
    {
        return 'php:' . $what . ':' . bin2hex(random_bytes(5));
    }

    public static function client(?string $socket = null,
                                  array $options = []): \Tslock\Client
    {
        return \Tslock\Client::fromUrl('unix://' . ($socket ?? self::socket()),
                                       $options);
    }

    /** The command line of a child php with this extension (and ini). */
    public static function php(array $ini = [], string $binary = 'php'): array
    {
        $cmd = [$binary, '-d', 'extension=' . getenv('TSLOCK_PHP_EXT')];
        foreach ($ini as $k => $v) {
            $cmd[] = '-d';
            $cmd[] = "$k=$v";
        }
        return $cmd;
    }

    /**
     * Run a child; returns [exit code, stdout, stderr, seconds].
     */
    public static function runCmd(array $cmd, ?string $stdin = null): array
    {
        $t = microtime(true);
        $p = proc_open($cmd, [0 => ['pipe', 'r'], 1 => ['pipe', 'w'],
                              2 => ['pipe', 'w']], $pipes);
        fwrite($pipes[0], $stdin ?? '');
        fclose($pipes[0]);
        $out = stream_get_contents($pipes[1]);
        $err = stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        $rc = proc_close($p);
        return [$rc, $out, $err, microtime(true) - $t];
    }

    /** Run a PHP snippet (without "<?php") in a child. */
    public static function runCode(string $code, array $ini = []): array
    {
        $file = tempnam(sys_get_temp_dir(), 'tslock-php');
        file_put_contents($file, "<?php\n" . $code);
        try {
            return self::runCmd(array_merge(self::php($ini), [$file]));
        } finally {
            unlink($file);
        }
    }

    /**
     * Start one contention worker per kind on key for $seconds, all at
     * once; returns their reports summed: sections each, overlaps seen,
     * losses reported.
     */
    public static function contend(array $kinds, string $key, float $seconds,
                                   ?string $socket = null): array
    {
        return self::contendMany([[$kinds, $key, $socket]], $seconds)[0];
    }

    /**
     * Several contend() runs at once (each [kinds, key, socket]), so that
     * one test covers every server in the time of one.
     */
    public static function contendMany(array $runs, float $seconds): array
    {
        $start = microtime(true) + 0.5;
        $procs = [];
        foreach ($runs as $n => [$kinds, $key, $socket]) {
            foreach ($kinds as $i => $kind) {
                $cmd = array_merge(self::php(), [
                    __DIR__ . '/workers/contend.php', $kind,
                    $socket ?? self::socket(), self::socket(), $key,
                    (string)$start, (string)$seconds]);
                $p = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']],
                               $pipes);
                $procs[] = [$n, "$kind#$i", $p, $pipes];
            }
        }
        $sums = [];
        foreach ($runs as $n => $run) {
            $sums[$n] = ['sections' => [], 'overlaps' => 0, 'lost' => 0,
                         'errors' => []];
        }
        foreach ($procs as [$n, $who, $p, $pipes]) {
            $out = stream_get_contents($pipes[1]);
            $err = stream_get_contents($pipes[2]);
            proc_close($p);
            $r = json_decode($out, true);
            if (!is_array($r)) {
                $sums[$n]['errors'][] = "$who: $out $err";
                continue;
            }
            $sums[$n]['sections'][$who] = $r['sections'];
            $sums[$n]['overlaps'] += $r['overlaps'];
            $sums[$n]['lost'] += $r['lost'];
            if ($r['error'] !== null) {
                $sums[$n]['errors'][] = "$who: " . $r['error'];
            }
        }
        return $sums;
    }
}
