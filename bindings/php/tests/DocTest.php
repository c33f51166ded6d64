<?php
// SPDX-License-Identifier: BSD-3-Clause
//
// DocTest.php - doc/php.md cannot rot: every ```php example in it runs in
// a child php with the extension, REDIS_URL set to the test's server and
// assert() on; every row of its migration table names a MigrationTest
// test that exists; every stream option and lock option it lists is one
// the extension takes.

declare(strict_types=1);

namespace Tslock\Tests;

final class DocTest extends TestCase
{
    private static function page(): string
    {
        return (string)file_get_contents(getenv('TSLOCK_SRCDIR')
                                         . '/doc/php.md');
    }

    public static function examples(): array
    {
        preg_match_all('/```php\n(.*?)```/s', self::page(), $m);
        $out = [];
        foreach ($m[1] as $i => $code) {
            $out['example ' . ($i + 1)] = [$code];
        }
        return $out;
    }

    /** @dataProvider examples */
    public function testExampleRuns(string $code): void
    {
        $file = tempnam(sys_get_temp_dir(), 'tslock-doc');
        file_put_contents($file, $code);
        putenv('REDIS_URL=' . self::url());
        try {
            [$rc, $out, $err] = self::runCmd(array_merge(
                self::php(['zend.assertions' => 1, 'assert.exception' => 1,
                           'display_errors' => 'stderr']),
                [$file]));
        } finally {
            unlink($file);
            putenv('REDIS_URL');
        }
        $this->assertSame(0, $rc, $out . $err);
        $this->assertSame('', $err);
    }

    public function testEveryMigrationRowIsTested(): void
    {
        $section = explode('## Migrating', self::page(), 2)[1];
        preg_match_all('/^\|[^\n]*`MigrationTest::(\w+)`\s*\|$/m', $section,
                       $m);
        $this->assertCount(5, $m[1], 'rows naming their test');
        foreach ($m[1] as $test) {
            $this->assertTrue(method_exists(MigrationTest::class, $test),
                              "doc/php.md names $test");
        }
    }

    public function testEveryListedOptionIsTaken(): void
    {
        $page = self::page();
        $options = explode('```php', explode('| option | values |', $page,
                                             2)[1], 2)[0];
        preg_match_all('/^\| `(\w+)`(?:, `(\w+)`, `(\w+)`)? \|/m', $options,
                       $m);
        $m[1] = array_merge($m[1], array_filter($m[2]), array_filter($m[3]));
        $this->assertCount(11, $m[1], implode(' ', $m[1]));
        $c = self::client();
        foreach ($m[1] as $option) {
            $value = match ($option) {
                'scheme' => 'token', 'unit' => 's', 'dialect' => 'redis-docs',
                'rw' => 'shared', 'permits' => 2, 'retry' => [5, 10],
                default => true,
            };
            $c->lock(self::key(), 1.0, [$option => $value]);
        }
        $stream = explode('Any other name', explode('| `stream` option |',
                                                    $page, 2)[1], 2)[0];
        preg_match_all('/^\| `(\w+)`(?: \(bool\))? \| `\w+`/m', $stream, $m);
        foreach ($m[1] as $name) {
            try {
                \Tslock\Client::fromUrl('rediss://127.0.0.1:1',
                                        ['timeout' => 0.2,
                                         'stream' => [$name => '1']]);
            } catch (\Tslock\Exception\LockException $e) {
                $this->assertStringNotContainsString('expected one of',
                                                     $e->getMessage(), $name);
            }
        }
        $this->assertGreaterThanOrEqual(8, count($m[1]));
    }
}
