<?php
// SPDX-License-Identifier: BSD-3-Clause
//
// TlsTest.php - rediss:// with phpredis' names of the stream context,
// against a TLS-only redis-server that requires client certificates
// (made by tests/test_php.sh): cafile, local_cert and local_pk connect
// and lock; a stranger CA, a peer_name the certificate does not carry and
// a missing client certificate fail with TSLOCK_ETLS or TSLOCK_EIO;
// verify_peer and verify_peer_name false let them through.

declare(strict_types=1);

namespace Tslock\Tests;

use Tslock\Exception\ConnectionException;

final class TlsTest extends TestCase
{
    private static function tls(): array
    {
        $spec = (string)getenv('TSLOCK_PHP_TLS');
        if ($spec === '') {
            self::markTestSkipped('no TLS server (openssl, redis-server TLS)');
        }
        [$host, $port, $pki] = explode(':', $spec, 3);
        return ["rediss://$host:$port", $pki];
    }

    private static function stream(string $pki, array $more = []): array
    {
        return ['stream' => $more + ['cafile' => "$pki/ca.crt",
                                     'local_cert' => "$pki/client.crt",
                                     'local_pk' => "$pki/client.key"],
                'timeout' => 5.0];
    }

    public function testStreamOptionsConnectAndLock(): void
    {
        [$url, $pki] = self::tls();
        $lock = \Tslock\Client::fromUrl($url, self::stream($pki))
            ->lock(self::key('tls'), 5.0);
        $this->assertTrue($lock->acquire());
        $this->assertTrue($lock->isAcquired());
        $this->assertTrue($lock->release());
    }

    public function testAStrangerCaIsRefused(): void
    {
        [$url, $pki] = self::tls();
        try {
            \Tslock\Client::fromUrl($url, self::stream($pki,
                ['cafile' => "$pki/stranger.crt"]));
            $this->fail('a server signed by another CA was trusted');
        } catch (ConnectionException $e) {
            $this->assertSame(\Tslock\ETLS, $e->getCode(), $e->getMessage());
        }
        $c = \Tslock\Client::fromUrl($url, self::stream($pki,
            ['cafile' => "$pki/stranger.crt", 'verify_peer' => false]));
        $this->assertTrue($c->lock(self::key('tls'))->get());
    }

    public function testPeerNameIsChecked(): void
    {
        [$url, $pki] = self::tls();
        try {
            \Tslock\Client::fromUrl($url, self::stream($pki,
                ['peer_name' => 'db.example.org']));
            $this->fail('a certificate for another name was taken');
        } catch (ConnectionException $e) {
            $this->assertSame(\Tslock\ETLS, $e->getCode(), $e->getMessage());
        }
        $c = \Tslock\Client::fromUrl($url, self::stream($pki,
            ['peer_name' => 'db.example.org', 'verify_peer_name' => false]));
        $this->assertTrue($c->lock(self::key('tls'))->get());
    }

    public function testAClientCertificateIsRequired(): void
    {
        [$url, $pki] = self::tls();
        $this->expectException(ConnectionException::class);
        \Tslock\Client::fromUrl($url, ['stream' => ['cafile' => "$pki/ca.crt"],
                                       'timeout' => 5.0])
            ->lock(self::key('tls'))->acquire();
    }
}
